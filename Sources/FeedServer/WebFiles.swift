import Foundation
import Hummingbird
import NIOCore

/// The page's files (package resources under `Web/`), read once at start and served by name only: a request can
/// name a file of this list and nothing else.
struct WebFiles: Sendable {
    private var files: [String: (bytes: [UInt8], mime: String)] = [:]

    /// The bundled page.
    /// - Throws: when the resources are missing.
    static func load() throws -> WebFiles {
        guard let root = Bundle.module.url(forResource: "Web", withExtension: nil) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "the page's resources (Web/) are missing"])
        }
        var web = WebFiles()
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        while let relative = enumerator?.nextObject() as? String {
            let url = root.appendingPathComponent(relative)
            guard let values = try? url.resourceValues(forKeys: [.isRegularFileKey]), values.isRegularFile == true,
                  let data = try? Data(contentsOf: url) else { continue }
            web.files[relative] = (Array(data), ContentType.of(relative))
        }
        return web
    }

    /// The file `name`, or 404.
    func response(for name: String) throws -> Response {
        guard let file = files[name] else { throw HTTPError(.notFound) }
        return Response(status: .ok, headers: [.contentType: file.mime, .cacheControl: "no-cache"],
                        body: .init(byteBuffer: ByteBuffer(bytes: file.bytes)))
    }
}
