import Dispatch
import EngineSupport
import Foundation
import Media
import TestSupport
import Testing

/// A blocked open on a server that never answers ends when cancelled, or when its time limit passes. Events, not
/// durations, decide here; how soon it returns is measured by `Benchmarks/cancel-latency.sh`.
@Suite struct CancellationTests {
    @Test("cancelling an open blocked on a server that never answers ends it with .cancelled", .timeLimit(.minutes(1)))
    func cancelBlockedOpen() throws {
        let server = try SilentServer()
        let token = CancellationToken()
        let options = { var options = OpenOptions(); options.openTimeout = 600; return options }()
        let ended = Locked<MediaError.Kind?>(nil)
        let url = server.url()
        Thread.detachNewThread {
            do {
                _ = try MediaFile(path: url, options: options, cancellation: token)
                ended.set(.invalidData)  // opened: cannot be, the server never answers
            } catch {
                ended.set((error as? MediaError)?.kind ?? .io)
            }
        }
        // The open is connected and waiting for an answer that never comes: only the cancel can end it.
        #expect(waitFor { server.accepted >= 1 })
        #expect(ended.get() == nil)
        token.cancel()
        #expect(waitFor { ended.get() != nil })
        #expect(ended.get() == .cancelled)
    }

    @Test("the open time limit ends a blocked open with .timedOut")
    func openTimeout() throws {
        let server = try SilentServer()
        var options = OpenOptions()
        options.openTimeout = 0.3
        let error = try #require(throws: MediaError.self) { try MediaFile(path: server.url(), options: options) }
        #expect(error.kind == .timedOut)
        #expect(server.accepted >= 1, "it connected, then waited")
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
