import Dispatch
import Foundation
import Media
import TestSupport
import Testing

/// A blocked open on a server that never answers returns promptly when cancelled, or when its time limit passes.
/// Latency is measured, so `make test` runs this suite alone (VIDEOFEED_ISOLATED=1).
@Suite(.serialized, .enabled(if: isolatedRun, "latency test: runs alone under make test"))
struct CancellationTests {
    @Test("cancelling a blocked open returns within 200 ms with .cancelled")
    func cancelBlockedOpen() throws {
        let server = try SilentServer()
        let token = CancellationToken()
        var options = OpenOptions()
        options.openTimeout = 30
        let started = DispatchTime.now()
        let cancelAt = started + .milliseconds(300)
        // A thread of its own: the test itself blocks a cooperative-pool thread, and on a 2-core machine Dispatch's
        // global queues may have no free thread to run a timer block on time.
        Thread.detachNewThread {
            let wait = Int64(cancelAt.uptimeNanoseconds) - Int64(DispatchTime.now().uptimeNanoseconds)
            if wait > 0 { usleep(UInt32(wait / 1000)) }
            token.cancel()
        }
        let error = try #require(throws: MediaError.self) {
            try MediaFile(path: server.url(), options: options, cancellation: token)
        }
        let returned = DispatchTime.now()
        #expect(error.kind == .cancelled)
        let afterCancel = Double(returned.uptimeNanoseconds - cancelAt.uptimeNanoseconds) / 1e6
        #expect(afterCancel < 200, "returned \(afterCancel) ms after cancel")
        #expect(afterCancel > -5, "returned before cancel")
    }

    @Test("the open time limit ends a blocked open with .timedOut")
    func openTimeout() throws {
        let server = try SilentServer()
        var options = OpenOptions()
        options.openTimeout = 0.3
        let started = Date()
        let error = try #require(throws: MediaError.self) { try MediaFile(path: server.url(), options: options) }
        #expect(error.kind == .timedOut)
        #expect(Date().timeIntervalSince(started) < 2)
    }

    @Test("a token cancelled before start never opens")
    func cancelledBeforeStart() throws {
        let token = CancellationToken()
        token.cancel()
        let error = try #require(throws: MediaError.self) {
            try MediaFile(path: TestFixtures.media("hevc.mp4"), cancellation: token)
        }
        #expect(error.kind == .cancelled)
    }

    @Test("cancelling between packets stops decoding with .cancelled")
    func cancelDuringDecode() throws {
        let token = CancellationToken()
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4"), cancellation: token))
        _ = try decoder.nextFrame()
        token.cancel()
        let error = try #require(throws: MediaError.self) { while try decoder.nextFrame() != nil {} }
        #expect(error.kind == .cancelled)
    }
}
