import Feed
import FeedPlayer
import Foundation
import Media
import TestSupport
import Testing

/// The player shows a photo upright by its EXIF Orientation (the frame's display matrix) and an interlaced video
/// without combs.
@Suite struct ShownFrameTests {
    func configuration(_ size: Size) -> FeedPlayerConfiguration {
        var c = FeedPlayerConfiguration()
        c.displaySize = size
        c.pixelFormat = .rgb24
        c.workers = 1
        return c
    }

    @Test("a photo tagged EXIF Orientation 6, 8 or 7 (mirrored) plays upright", arguments: [6, 8, 7])
    func exifPhoto(n: Int) throws {
        let player = FeedPlayer(feed: [item(TestFixtures.orientation(n), 0)],
                                configuration: configuration(Size(width: 48, height: 64)))
        defer { player.shutdown() }
        player.start(at: 0)
        let frame = try #require(player.waitForFirstFrame(of: 0, timeout: 30).frame)
        try #require(frame.image.size == Size(width: 48, height: 64))
        let corners = [(4, 4), (43, 4), (4, 59), (43, 59)].map { x, y in
            let p = Array(frame.image.pixel(x: x, y: y))
            return Corner(r: p[0], g: p[1], b: p[2])
        }
        #expect(corners == TestFixtures.exifCorners(n).map { Optional($0) }, "EXIF Orientation \(n)")
    }

    @Test("an interlaced video plays without combs")
    func interlaced() throws {
        let player = FeedPlayer(feed: [item(TestFixtures.transcode("interlaced.ts"), 0)],
                                configuration: configuration(Size(width: 720, height: 576)))
        defer { player.shutdown() }
        player.start(at: 0)
        var frames: [PlayerFrame] = []
        for _ in 0..<50 where frames.count < 6 {
            // Prefetching keeps a buffer of decoded frames: wait for it, then take what is there.
            _ = player.settle(timeout: 30)
            if let frame = player.nextPlaybackFrame() { frames.append(frame) }
        }
        #expect(frames.count == 6)
        for frame in frames {
            #expect(frame.image.size == Size(width: 720, height: 576))
            let strength = Combing.strength(rgb: frame.image.bytes, width: 720, height: 576)
            #expect(strength < 0.3, "frame at \(frame.time) s combs: \(strength)")
        }
    }
}
