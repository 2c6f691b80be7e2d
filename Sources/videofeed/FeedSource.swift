import Feed
import Foundation

/// Resolves the SOURCE argument of `play` and `demo` into feed items through the Feed module: nothing → the bundled
/// feed; a folder → its media files; a file → a listing in any shape; an http(s) URL → the remote listing, falling
/// back to the bundled feed when it fails.
enum FeedSource {
    static func items(_ source: String?) async throws -> [FeedItem] {
        let page = try await loader(source).loadAll()
        for skipped in page.skipped { Console.error("skipped feed entry: \(skipped)") }
        for warning in page.warnings { Console.error("warning: \(warning)") }
        return page.items
    }

    static func loader(_ source: String?) -> any FeedLoader {
        guard let source else { return BundledFeedLoader() }
        if let url = URL(string: source), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" {
            return RemoteFeedLoader(url: url, format: nil).withFallback(BundledFeedLoader())
        }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: source, isDirectory: &isFolder), isFolder.boolValue {
            return DirectoryFeedLoader(root: URL(fileURLWithPath: source))
        }
        return ManifestFeedLoader(file: URL(fileURLWithPath: source))
    }

    /// A path for Media: a file URL's path, any other URL as text.
    static func mediaPath(_ item: FeedItem) -> String {
        item.source.isFileURL ? item.source.path : item.source.absoluteString
    }
}
