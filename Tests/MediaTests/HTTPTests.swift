import Media
import TestSupport
import Testing

/// Opening over http from a real server on 127.0.0.1.
@Suite struct HTTPTests {
    @Test("probe and decode over http give the same frames as the local file", arguments: ["vp9.webm", "mpeg4.avi"])
    func decodeOverHTTP(name: String) throws {
        let server = try StaticHTTPServer(folder: TestFixtures.folder.appendingPathComponent("media").path)
        let decoder = try VideoDecoder(file: MediaFile(path: server.url(name)), options: DecoderOptions(stream: .firstVideo))
        #expect(decoder.file.item == server.url(name))
        var writer = FrameMD5Writer(decoder: decoder)
        var text = ""
        while let frame = try decoder.nextFrame() { text += writer.lines(for: frame) }
        #expect(text == (try TestFixtures.golden(name)))
    }

    @Test("a missing URL is fileNotFound naming the URL")
    func notFound() throws {
        let server = try StaticHTTPServer(folder: TestFixtures.folder.appendingPathComponent("media").path)
        let error = try #require(throws: MediaError.self) { try MediaFile(path: server.url("missing.mp4")) }
        #expect(error.kind == .fileNotFound)
        #expect(error.item == server.url("missing.mp4"))
    }
}
