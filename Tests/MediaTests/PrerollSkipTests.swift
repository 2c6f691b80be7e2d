import Foundation
@testable import Media
import TestSupport
import Testing

/// A segment after the item's start decodes from the keyframe before it; the pictures before the window that no
/// other picture refers to are skipped, not decoded and dropped, and the segment's bytes do not change.
@Suite struct PrerollSkipTests {
    /// Segment `index` of the first rendition, and the video frames decoded for it, with the skip on or off.
    static func segment(_ name: String, _ index: Int, skipping: Bool) throws -> (TranscodedSegment, Int) {
        let transcoder = try Transcoder(file: MediaFile(path: TestFixtures.transcode(name)), settings: TranscodeTests.single)
        transcoder.skipsPreroll = skipping
        let segment = try transcoder.segment(index, rendition: 0)
        return (segment, transcoder.framesDecoded)
    }

    @Test("a segment deep in a long GOP skips the preroll's unreferenced B-pictures and makes the same bytes",
          arguments: [1, 2])
    func longGOP(index: Int) throws {
        // long_gop_b.mp4: H.264 with B-frames and one keyframe; segment 1 is 1–3 s, segment 2 3–5 s.
        let (skipped, fewer) = try Self.segment("long_gop_b.mp4", index, skipping: true)
        let (decoded, all) = try Self.segment("long_gop_b.mp4", index, skipping: false)
        #expect(skipped.media == decoded.media)
        #expect(skipped.initialization == decoded.initialization)
        #expect(skipped.frames == decoded.frames)
        // 30 (segment 1) or 90 (segment 2) pictures before the window, about half of them B-pictures.
        #expect(fewer < all - (index == 1 ? 5 : 20), "decoded \(fewer) frames with the skip, \(all) without")
    }

    @Test("other containers decode every picture before the window, as before")
    func otherContainers() throws {
        // one_keyframe.ts: MPEG-TS, whose packets may lack a presentation time.
        let (skipped, withSkip) = try Self.segment("one_keyframe.ts", 1, skipping: true)
        let (decoded, without) = try Self.segment("one_keyframe.ts", 1, skipping: false)
        #expect(withSkip == without)
        #expect(skipped.media == decoded.media)
    }
}
