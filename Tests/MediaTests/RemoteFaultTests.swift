import Foundation
import Media
import TestSupport
import Testing

/// A misbehaving loopback server: each fault ends in a typed error within its time limit. Time is measured, so
/// `make test` runs this suite alone (VIDEOFEED_ISOLATED=1); every bound is generous for a shared machine.
@Suite(.serialized, .enabled(if: isolatedRun, "latency test: runs alone under make test"))
struct RemoteFaultTests {
    static let media = TestFixtures.folder.appendingPathComponent("media").path

    /// Runs `body`, returning its error and the seconds it took.
    func timed(_ body: () throws -> Void) -> (MediaError?, Double) {
        let started = Date()
        do {
            try body()
            return (nil, Date().timeIntervalSince(started))
        } catch {
            return (error as? MediaError, Date().timeIntervalSince(started))
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
        let (error, seconds) = timed { _ = try MediaFile(path: server.url("stall", "h264_portrait.mp4"), options: options) }
        #expect(error?.kind == .timedOut)
        #expect(error?.item == server.url("stall", "h264_portrait.mp4"))
        #expect(seconds < 10)
    }

    @Test("a body that stalls mid-decode: timedOut at the read limit")
    func stallDuringRead() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        var options = OpenOptions()
        options.readTimeout = 1
        let (error, seconds) = timed { try decodeAll(server.url("stall", "vp9.webm"), options) }
        #expect(error?.kind == .timedOut)
        #expect(seconds < 10)
    }

    @Test("a connection reset: an I/O error, not the demuxer's 'invalid data'")
    func reset() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        let (error, seconds) = timed { try decodeAll(server.url("reset", "h264_portrait.mp4"), OpenOptions()) }
        #expect(error?.kind == .io)
        #expect(seconds < 10)
    }

    @Test("a Content-Length larger than the body: an I/O error")
    func wrongContentLength() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        let (error, seconds) = timed { try decodeAll(server.url("short", "h264_portrait.mp4"), OpenOptions()) }
        #expect(error?.kind == .io)
        #expect(error?.message.contains("prematurely") == true)
        #expect(seconds < 10)
    }

    @Test("an endless body of noise: timedOut at the open limit")
    func endlessBody() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        var options = OpenOptions()
        options.openTimeout = 2
        let (error, seconds) = timed { _ = try MediaFile(path: server.url("endless", "clip.mp4"), options: options) }
        #expect(error?.kind == .timedOut)
        #expect(seconds < 12)
    }

    @Test("a trickle that never trips the read timeout ends at the item's wall-clock limit")
    func trickleHitsItemLimit() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        var options = OpenOptions()
        options.itemTimeLimit = 1.5
        let (error, seconds) = timed { try decodeAll(server.url("trickle", "vp9.webm"), options) }
        #expect(error?.kind == .timedOut)
        #expect(seconds >= 1.4)
        #expect(seconds < 12)
    }

    @Test("a redirect to file:// is refused and the file is never read")
    func redirectToFile() throws {
        let server = try FaultHTTPServer(folder: Self.media)
        let secret = TestFixtures.folder.appendingPathComponent("hostile/secret.txt").path
        let url = server.redirectToFile(secret)
        let (error, seconds) = timed { _ = try MediaFile(path: url, options: OpenOptions()) }
        // FFmpeg's http protocol follows redirects only to http(s); file is not in a remote item's whitelist anyway.
        #expect(error?.kind == .invalidArgument || error?.kind == .policyViolation)
        #expect(error?.item == url)
        #expect(error?.description.contains("VFE-HOSTILE-SECRET") == false)
        #expect(seconds < 10)
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
