import Foundation
@testable import Media
import TestSupport
import Testing
@testable import Transcode

/// Durations from what decodes: the plan's duration, last frame and segments follow the video's real end
/// (``MediaFile/videoEnd(stream:)``), never a header alone.
@Suite struct DurationTests {
    /// How the batch and `serve` open items: the header's stream information only (`TranscodeBatch`'s default).
    static var batchOptions: OpenOptions { .untrusted(streamInfo: .header) }

    /// The end of the last frame that decodes, on the item's timeline (from the container's start), and the frame
    /// count: ffmpeg's framemd5 with `-copyts`, less the start.
    static func decodedEnd(_ path: String) throws -> (end: Double, frames: Int) {
        let file = try MediaFile(path: path)
        let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: 1))
        var end = 0.0, frames = 0
        while let frame = try decoder.nextFrame() {
            frames += 1
            end = max(end, TranscodeTests.stamp(frame) + (frame.duration ?? 0) - file.info.startTime)
        }
        return (end, frames)
    }

    @Test("a fragmented MP4 whose mvhd, mehd, tkhd and mdhd say 0xFFFFFFFF in a 30000 timescale claims 143,165 s when opened as the batch opens it, and plans the 2.567 s that decode: 2 segments on the default grid (1 s, then 2 s)")
    func unknownDurationFragmentedMP4() throws {
        let path = TestFixtures.duration("frag_unknown_duration.mp4")
        let decoded = try Self.decodedEnd(path)
        let file = try MediaFile(path: path, options: Self.batchOptions)
        let claim = file.info.duration ?? file.info.primaryVideoStream?.duration ?? 0
        #expect(abs(claim - Double(UInt32.max) / 30000) < 0.1, "the claim as serve read it: \(claim) s")
        let plan = try Transcoder(file: file, settings: TranscodeSettings()).plan
        #expect(abs(plan.duration - decoded.end) < 1.0 / 30, "\(plan.duration) s vs \(decoded.end) s")
        #expect(abs((plan.claimedDuration ?? 0) - 143_165.58) < 0.1)
        #expect(plan.segmentCount == 2)
        #expect(plan.grid.start(1) == 1 && plan.grid.end(1) == 3)
    }

    @Test("the patched fragmented MP4 transcodes to exactly what decodes: its frames, its span, 2 segments whose lengths add up to its duration; a third segment is past the end")
    func unknownDurationTranscode() throws {
        let path = TestFixtures.duration("frag_unknown_duration.mp4")
        let decoded = try Self.decodedEnd(path)
        let out = try TestFixtures.temporaryFolder("duration")
        defer { try? FileManager.default.removeItem(at: out) }
        let transcoder = try Transcoder(file: MediaFile(path: path, options: Self.batchOptions),
                                        settings: TranscodeTests.single)
        let report = try transcoder.run(into: out)
        let rendition = try #require(report.renditions.first)
        #expect(rendition.segments.count == 2)
        #expect(abs(rendition.segmentDurations.reduce(0, +) - transcoder.plan.duration) < 1.0 / 30)
        let made = try TranscodeTests.decode(out.appendingPathComponent(try #require(rendition.mp4)).path)
        #expect(made.frames == decoded.frames)
        let again = try Transcoder(file: MediaFile(path: path, options: Self.batchOptions),
                                   settings: TranscodeTests.single)
        #expect(throws: MediaError.self) { try again.segments(2, renditions: [0])[0] }
        do {
            _ = try again.segments(2, renditions: [0])[0]
        } catch let error as MediaError {
            #expect(error.isPastEnd)
        }
    }

    @Test("the end read from the packets is within one frame of the last decoded frame's end, however wrong the header: an MP4 whose mvhd claims 3,600 s, a TS cut midway, a WebM without a duration",
          arguments: ["frag_unknown_duration.mp4", "moov_claims_long.mp4", "truncated.ts", "no_duration.webm"])
    func endWithinAFrame(name: String) throws {
        let path = TestFixtures.duration(name)
        let decoded = try Self.decodedEnd(path)
        let file = try MediaFile(path: path, options: Self.batchOptions)
        let video = try #require(file.info.primaryVideoStream)
        let end = try #require(try file.videoEnd(stream: video.index))
        let frame = 1 / (video.averageFrameRate.value ?? 25)
        #expect(end.isComplete)
        #expect(abs(end.end - decoded.end) <= frame + 0.001, "\(end.end) s vs \(decoded.end) s")
        #expect(end.lastStart < end.end && end.lastStart >= end.end - 2 * frame)
        let plan = try Transcoder(file: MediaFile(path: path, options: Self.batchOptions),
                                  settings: TranscodeSettings()).plan
        #expect(plan.duration == end.end && plan.lastFrameStart == end.lastStart)
        #expect(plan.segmentCount == plan.grid.index(at: decoded.end - frame) + 1)
    }

    @Test("reading the end leaves the file as opened (it reads on a demuxer of its own): the first frames are those of a fresh open")
    func rewound() throws {
        let path = TestFixtures.duration("truncated.ts")
        func firstFrames(measuring: Bool) throws -> [Int64] {
            let file = try MediaFile(path: path)
            if measuring { _ = try file.videoEnd(stream: try #require(file.info.primaryVideoStream).index) }
            let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: 1))
            var stamps: [Int64] = []
            while stamps.count < 5, let frame = try decoder.nextFrame() { stamps.append(frame.timestamp ?? -1) }
            return stamps
        }
        let measured = try firstFrames(measuring: true), fresh = try firstFrames(measuring: false)
        #expect(measured == fresh)
    }

    @Test("a claim the file's bytes cannot hold is not trusted when the end cannot be read: held to 250 bytes a second of the file")
    func absurdClaimWithoutAnEnd() throws {
        let file = try MediaFile(path: TestFixtures.duration("frag_unknown_duration.mp4"), options: Self.batchOptions)
        let plan = try TranscodePlan(info: file.info, settings: TranscodeSettings(), item: "x", videoEnd: nil,
                                     fileSize: 63_260)
        #expect(plan.duration <= 63_260 / 250 && plan.segmentCount <= 128)
    }

    @Test("a normal clip plans as before: long_gop_b.mp4 5.2 s, 4 segments on the default grid")
    func normalClipUnchanged() throws {
        let plan = try Transcoder(file: MediaFile(path: TestFixtures.transcode("long_gop_b.mp4")),
                                  settings: TranscodeSettings()).plan
        #expect(abs(plan.duration - 5.2) < 0.001 && plan.segmentCount == 4)
    }
}
