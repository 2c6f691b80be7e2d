import Feed
import FeedPlayer
import Foundation
import Media
import Prefetch
import TestSupport
import Testing

/// A 0.1 s clip of three frames (a boomerang's shape), made once with the ffmpeg CLI: 360x640 H.264 with B-frames at
/// 30 fps, fitted into the tests' 180x320 box (230,400 bytes a BGRA frame).
private let shortClip: Result<String, any Error> = Result {
    let folder = try TestFixtures.temporaryFolder("loop-hold")
    let path = folder.appendingPathComponent("short.mp4").path
    let result = try run(URL(fileURLWithPath: "/usr/bin/ffmpeg"),
                         ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                          "testsrc2=size=360x640:rate=30", "-frames:v", "3", "-c:v", "libx264", path])
    guard result.status == 0 else { throw ClipFailed(message: result.stderr) }
    return path
}

private struct ClipFailed: Error {
    var message: String
}

/// Pulls `count` frames of the current item through the pull API, waiting for each (a bound that fails the test,
/// never a threshold: a held loop hands frames over at once).
private func pull(_ player: FeedPlayer, _ count: Int) -> [PlayerFrame] {
    var frames: [PlayerFrame] = []
    while frames.count < count, let frame = player.nextPlaybackFrame(waitingUpTo: 30) { frames.append(frame) }
    return frames
}

@Suite struct LoopHoldTests {
    @Test("a 3-frame clip looped 20 times is decoded once and served from held frames, every frame in order")
    func shortClipLoopsFromHeldFrames() throws {
        let player = FeedPlayer(feed: [item(try shortClip.get(), 0)], policy: .forward(0),
                                configuration: smallConfiguration())
        player.start(at: 0)
        let frames = pull(player, 60)
        try #require(frames.count == 60)
        let expected = (0..<60).map { (time: Double($0 % 3) / 30, loop: $0 / 3) }
        #expect(zip(frames, expected).allSatisfy { abs($0.time - $1.time) < 1e-6 && $0.loop == $1.loop },
                "\(frames.map { "\($0.loop):\($0.time)" })")
        // The same three pictures every loop.
        #expect(frames.indices.allSatisfy { frames[$0].image.bytes == frames[$0 % 3].image.bytes })
        let m = player.metrics
        #expect(m.itemOpens == 1 && m.framesDecodedByDecoders == 3 && m.loopsHeld == 1, "\(m)")
        #expect(m.framesReplayed >= 57, "\(m)")
        #expect(m.peakDecodedBytes <= m.memoryBudget)
    }

    @Test("a clip over the bound loops by decoding, every frame in order")
    func longClipLoopsByDecoding() throws {
        var configuration = smallConfiguration()
        configuration.loopHold = PrefetchRules.LoopHold(frames: 10, bytes: 1 << 30)  // hevc.mp4 has 25 frames
        let player = FeedPlayer(feed: [item(TestFixtures.media("hevc.mp4"), 0)], policy: .forward(0),
                                configuration: configuration)
        player.start(at: 0)
        let frames = pull(player, 60)
        try #require(frames.count == 60)
        let expected = (0..<60).map { (time: Double($0 % 25) * 0.04, loop: $0 / 25) }
        #expect(zip(frames, expected).allSatisfy { abs($0.time - $1.time) < 1e-6 && $0.loop == $1.loop })
        let m = player.metrics
        #expect(m.loopsHeld == 0 && m.framesReplayed == 0, "\(m)")
        #expect(m.framesDecodedByDecoders >= 60, "\(m)")
    }

    @Test("a held loop counts in the decoded bytes until its item leaves the window")
    func heldFramesAreReleased() throws {
        let feed = [item(try shortClip.get(), 0)] + (1..<6).map { item(TestFixtures.media("hevc.mp4"), $0) }
        // hevc.mp4's 25 frames would be held too under the default bound: only the short clip's pass is here.
        var upTo10 = smallConfiguration()
        upTo10.loopHold = PrefetchRules.LoopHold(frames: 10, bytes: 1 << 30)
        var none = smallConfiguration()
        none.loopHold = .none
        let holding = FeedPlayer(feed: feed, configuration: upTo10)
        let decoding = FeedPlayer(feed: feed, configuration: none)
        let frameBytes = 180 * 320 * 4
        for player in [holding, decoding] {
            player.start(at: 0)
            #expect(player.settle(timeout: 30))
        }
        // Both hold the same frames in the window; the first only has the short clip's pass besides.
        #expect(holding.metrics.loopsHeld == 1 && decoding.metrics.loopsHeld == 0)
        #expect(holding.decodedBytes - decoding.decodedBytes == 3 * frameBytes,
                "\(holding.decodedBytes) vs \(decoding.decodedBytes)")
        // Item 0 leaves the window (now 3...5): the pass goes with it.
        for player in [holding, decoding] {
            player.move(to: 5)
            #expect(player.waitForFirstFrame(of: 5, timeout: 30).frame != nil)
            #expect(player.settle(timeout: 30))
        }
        #expect(!holding.windowIndexes.contains(0))
        #expect(holding.decodedBytes == decoding.decodedBytes, "\(holding.decodedBytes) vs \(decoding.decodedBytes)")
    }
}
