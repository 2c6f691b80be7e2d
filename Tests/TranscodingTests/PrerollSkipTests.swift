import Foundation
@testable import Media
import TestSupport
import Testing
@testable import Transcode

/// A segment after the item's start decodes from the keyframe before it; the pictures before the window that no
/// other picture refers to are skipped, not decoded and dropped, and the segment's bytes do not change.
@Suite struct PrerollSkipTests {
    /// Segment `index` of the first rendition, and the video frames decoded for it, with the skip on or off.
    static func segment(_ name: String, _ index: Int, skipping: Bool) throws -> (TranscodedSegment, Int) {
        try segment(path: TestFixtures.transcode(name), index, skipping: skipping)
    }

    static func segment(path: String, _ index: Int, skipping: Bool) throws -> (TranscodedSegment, Int) {
        let transcoder = try Transcoder(file: MediaFile(path: path), settings: TranscodeTests.single)
        transcoder.skipsPreroll = skipping
        let segment = try transcoder.segments(index, renditions: [0])[0]
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

    /// `long_gop_b.mp4` copied by the ffmpeg CLI (`-c copy`) with `arguments` into `name` in `folder`.
    static func remux(_ name: String, in folder: URL, _ arguments: [String]) throws -> String {
        let path = folder.appendingPathComponent(name).path
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", TestFixtures.transcode("long_gop_b.mp4"),
                            "-c", "copy"] + arguments + [path]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0)
        return path
    }

    @Test("an MP4 whose composition times repeat in the preroll makes the same bytes with the skip",
          arguments: [1, 2])
    func repeatedTimes(index: Int) throws {
        let folder = try TestFixtures.temporaryFolder("preroll-repeat")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Packet 30 (in decode order, about 1 s in) takes the presentation time of the packet before it: FFmpeg
        // then times that picture by its decode time, from its count of faulty times, which skipped pictures change.
        // (The same bytes also come without the stop at the first picture not timed by its own time: this file does
        // not need it.)
        let path = try Self.remux("repeat.mp4", in: folder, ["-bsf:v", "setts=pts=if(eq(N\\,30)\\,PREV_OUTPTS\\,PTS)"])
        let (skipped, fewer) = try Self.segment(path: path, index, skipping: true)
        let (decoded, all) = try Self.segment(path: path, index, skipping: false)
        #expect(skipped.media == decoded.media)
        #expect(skipped.frames == decoded.frames)
        #expect(fewer <= all)
    }

    @Test("an MP4 whose composition times contradict its pictures' order: the batch and a segment made alone agree")
    func contradictoryTimes() throws {
        let folder = try TestFixtures.temporaryFolder("preroll-contradict")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Each B-picture of the first 80 packets takes the time of the packet before it, less one tick: the times
        // no longer follow the order the pictures are shown in. FFmpeg's best-effort timestamps then depend on which
        // pictures were decoded, so the skip can change which pictures segment 1 holds against decoding them all
        // (docs/transcode.md). The batch runs the same routine, so a segment made alone is still the batch's.
        let path = try Self.remux("contradict.mp4", in: folder,
                                  ["-bsf:v", "setts=pts=if(lt(PTS\\,PREV_INPTS)*lt(N\\,80)\\,PREV_INPTS-1\\,PTS)"])
        let out = folder.appendingPathComponent("batch")
        _ = try Transcoder(file: MediaFile(path: path), settings: TranscodeTests.single).run(into: out)
        for index in [1, 2] {
            let (alone, _) = try Self.segment(path: path, index, skipping: true)
            let batch = try Data(contentsOf: out.appendingPathComponent("720x1280/seg-\(index).m4s"))
            #expect(Array(batch) == alone.media, "segment \(index)")
        }
    }

    @Test("H.264 in Matroska decodes every picture before the window (only MP4/MOV gives every packet its time)")
    func matroska() throws {
        let folder = try TestFixtures.temporaryFolder("preroll-mkv")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = try Self.remux("long_gop_b.mkv", in: folder, [])
        let (skipped, withSkip) = try Self.segment(path: path, 2, skipping: true)
        let (decoded, without) = try Self.segment(path: path, 2, skipping: false)
        #expect(withSkip == without)
        #expect(skipped.media == decoded.media)
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
