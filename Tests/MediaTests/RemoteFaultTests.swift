import Foundation
import Media
import TestSupport
import Testing

/// A misbehaving loopback server: each fault ends in its own typed error, named by the limit or the failure that ended
/// it (how soon is measured by `Benchmarks/cancel-latency.sh`, not here).
@Suite(.timeLimit(.minutes(2)))
struct RemoteFaultTests {
    static let media = TestFixtures.folder.appendingPathComponent("media").path

    /// Runs `body`, returning its error (nil if it succeeded).
    func failure(_ body: () throws -> Void) -> MediaError? {
        do {
            try body()
            return nil
        } catch {
            return error as? MediaError
        }
    }

    func decodeAll(_ url: String, _ options: OpenOptions) throws {
        let decoder = try VideoDecoder(file: MediaFile(path: url, options: options))
        while try decoder.nextFrame() != nil {}
    }

    @Test("a body that stalls while the header is read: timedOut at the open limit")
    func stallDuringOpen() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        var options = OpenOptions()
        options.openTimeout = 1
        // moov is at the end of h264_portrait.mp4: the open needs the half that never comes.
        let error = failure { _ = try MediaFile(path: server.url("stall", "h264_portrait.mp4"), options: options) }
        #expect(error?.kind == .timedOut)
        #expect(error?.message.contains("open time limit") == true, "\(String(describing: error))")
        #expect(error?.item == server.url("stall", "h264_portrait.mp4"))
    }

    @Test("a body that stalls mid-decode: timedOut at the read limit")
    func stallDuringRead() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        var options = OpenOptions()
        options.readTimeout = 1
        let error = failure { try decodeAll(server.url("stall", "vp9.webm"), options) }
        #expect(error?.kind == .timedOut)
        #expect(error?.message.contains("read time limit") == true, "\(String(describing: error))")
    }

    @Test("a connection reset: an I/O error, not the demuxer's 'invalid data'")
    func reset() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        let error = failure { try decodeAll(server.url("reset", "h264_portrait.mp4"), OpenOptions()) }
        #expect(error?.kind == .io)
    }

    @Test("a Content-Length larger than the body: an I/O error")
    func wrongContentLength() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        let error = failure { try decodeAll(server.url("short", "h264_portrait.mp4"), OpenOptions()) }
        #expect(error?.kind == .io)
        #expect(error?.message.contains("prematurely") == true)
    }

    @Test("an endless body of noise: timedOut at the open limit")
    func endlessBody() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        var options = OpenOptions()
        options.openTimeout = 2
        let error = failure { _ = try MediaFile(path: server.url("endless", "clip.mp4"), options: options) }
        #expect(error?.kind == .timedOut)
    }

    @Test("a trickle that never trips the read timeout ends at the item's wall-clock limit")
    func trickleHitsItemLimit() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        var options = OpenOptions()
        options.itemTimeLimit = 1.5
        let error = failure { try decodeAll(server.url("trickle", "vp9.webm"), options) }
        #expect(error?.kind == .timedOut)
        // The item's own limit, not the read timeout (30 s, which the trickle never trips).
        #expect(error?.message.contains("item's time limit") == true, "\(String(describing: error))")
    }

    @Test("a redirect to file:// is refused and the file is never read")
    func redirectToFile() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        let secret = TestFixtures.folder.appendingPathComponent("hostile/secret.txt").path
        let url = server.redirectToFile(secret)
        let error = failure { _ = try MediaFile(path: url, options: OpenOptions()) }
        // FFmpeg's http protocol follows redirects only to http(s); file is not in a remote item's whitelist anyway.
        #expect(error?.kind == .invalidArgument || error?.kind == .policyViolation)
        #expect(error?.item == url)
        #expect(error?.description.contains("VFE-HOSTILE-SECRET") == false)
    }

    @Test("a well-behaved answer from the same server decodes: the faults are the server's, not the client's")
    func control() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        let decoder = try VideoDecoder(file: MediaFile(path: server.url("ok", "h264_portrait.mp4")))
        var frames = 0
        while try decoder.nextFrame() != nil { frames += 1 }
        #expect(frames == 60)
    }
}
