import Foundation
import EngineSupport
@testable import Media
import TestSupport
import Testing
@testable import Transcode

/// The feed rendition: shape, timing, colour, audio, segments; checked by decoding what the transcoder made.
@Suite struct TranscodeTests {
    /// One rung, no preview: the quickest settings that still exercise the whole chain.
    static var single: TranscodeSettings {
        var s = TranscodeSettings()
        s.ladder = [Size(width: 720, height: 1280)]
        s.preview = nil
        return s
    }

    struct Decoded {
        var info: MediaInfo
        var frames: Int
        var meanLuma: Double
        /// From the first frame's timestamp to the end of the last frame, in seconds.
        var span: Double
    }

    /// A frame's raw timestamp in seconds (not relative to the container's start).
    static func stamp(_ frame: VideoFrame) -> Double {
        Double(frame.timestamp ?? 0) * Double(frame.timeBase.numerator) / Double(max(frame.timeBase.denominator, 1))
    }

    /// Decodes every frame of the first video stream; the mean of the Y plane over all frames (8-bit output only).
    static func decode(_ path: String) throws -> Decoded {
        let file = try MediaFile(path: path)
        let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: 1))
        var frames = 0
        var luma = 0.0
        var first: Double? = nil, end = 0.0
        while let frame = try decoder.nextFrame() {
            frames += 1
            first = first ?? stamp(frame)
            end = max(end, stamp(frame) + (frame.duration ?? 0))
            if frame.pixelFormatName == "yuv420p" {
                let bytes = frame.packedBytes()
                let count = frame.width * frame.height
                luma += Double(bytes.prefix(count).reduce(0) { $0 + Int($1) }) / Double(count)
            }
        }
        return Decoded(info: file.info, frames: frames, meanLuma: frames > 0 ? luma / Double(frames) : 0,
                       span: end - (first ?? 0))
    }

    static func transcode(_ path: String, _ settings: TranscodeSettings = single) throws -> (URL, TranscodeReport) {
        let out = try TestFixtures.temporaryFolder("transcode")
        let report = try Transcoder(file: MediaFile(path: path), settings: settings).run(into: out)
        return (out, report)
    }

    @Test("every fixture with motion keeps its frame count and duration (within one frame), is H.264 yuv420p with square pixels, and has audio exactly when the source has",
          arguments: ["rotated_phone.mp4", "interlaced.ts", "long_gop_b.mp4", "mono_22k.mkv", "surround.mp4",
                      "anamorphic.mkv", "hdr10_pq.mp4"])
    func timingAndFormat(name: String) throws {
        let source = try Self.decode(TestFixtures.transcode(name))
        let (out, report) = try Self.transcode(TestFixtures.transcode(name))
        defer { try? FileManager.default.removeItem(at: out) }
        let rendition = try #require(report.renditions.first)
        let made = try Self.decode(out.appendingPathComponent(try #require(rendition.mp4)).path)
        #expect(made.frames == source.frames)
        let video = try #require(made.info.primaryVideoStream)
        #expect(video.codec == "h264")
        #expect(video.pixelFormat == "yuv420p")
        #expect(video.sampleAspectRatio.value ?? 1 == 1)
        #expect(video.orientation == .identity)
        #expect(video.colorTransfer == "bt709")
        let frame = 1 / (source.info.primaryVideoStream?.averageFrameRate.value ?? 25)
        #expect(abs(made.span - source.span) <= frame + 0.001, "\(made.span) s vs \(source.span) s")
        let sourceAudio = source.info.streams.contains { $0.kind == .audio }
        #expect(made.info.streams.contains { $0.kind == .audio && $0.channels == 2 } == sourceAudio)
        #expect(report.hasAudio == sourceAudio)
        #expect(rendition.codecs.hasPrefix("avc1.64") && rendition.codecs.hasSuffix(sourceAudio ? ",mp4a.40.2" : rendition.codecs.suffix(6)))
    }

    @Test("a rotated phone clip comes out portrait and upright; an anamorphic one with square pixels at its display aspect")
    func shape() throws {
        let (out, report) = try Self.transcode(TestFixtures.transcode("rotated_phone.mp4"))
        defer { try? FileManager.default.removeItem(at: out) }
        #expect(report.renditions.map { Size(width: $0.width, height: $0.height) } == [Size(width: 272, height: 480)])
        let (wide, wideReport) = try Self.transcode(TestFixtures.transcode("anamorphic.mkv"))
        defer { try? FileManager.default.removeItem(at: wide) }
        #expect(wideReport.renditions.first.map { Size(width: $0.width, height: $0.height) } == Size(width: 512, height: 288))
        // The marker square the fixture draws bottom-left of the stored picture is top-left when upright.
        let file = try MediaFile(path: out.appendingPathComponent("720x1280.mp4").path)
        let frame = try #require(try VideoDecoder(file: file).nextFrame())
        let bytes = frame.packedBytes()
        func luma(_ x: Int, _ y: Int) -> Int { Int(bytes[y * frame.width + x]) }
        #expect(luma(20, 20) > 200, "top-left of the upright picture is the white marker")
        #expect(luma(frame.width - 20, frame.height - 20) < 200)
    }

    @Test("the ladder fits each box, never upscales, and drops rungs that would repeat a size")
    func ladder() throws {
        var settings = TranscodeSettings()
        settings.preview = nil
        let (out, report) = try Self.transcode(TestFixtures.media("h264_portrait.mp4"), settings)
        defer { try? FileManager.default.removeItem(at: out) }
        #expect(report.renditions.map(\.name) == ["720x1280", "540x960", "360x640"])
        #expect(report.renditions.map(\.width) == [720, 540, 360])
        let (small, smallReport) = try Self.transcode(TestFixtures.media("hevc.mp4"), settings)
        defer { try? FileManager.default.removeItem(at: small) }
        // 320x240 fits every box as it is: one rendition at its own size.
        #expect(smallReport.renditions.map { "\($0.width)x\($0.height)" } == ["320x240"])
    }

    @Test("HDR (PQ and HLG) is tone-mapped to SDR BT.709 within 10 % of ffmpeg's zscale+tonemap reference brightness",
          arguments: ["hdr10_pq.mp4", "hlg.mp4"])
    func hdr(name: String) throws {
        let source = TestFixtures.transcode(name)
        let (out, report) = try Self.transcode(source)
        defer { try? FileManager.default.removeItem(at: out) }
        #expect(report.toneMapped)
        let ours = try Self.decode(out.appendingPathComponent("720x1280.mp4").path)
        let reference = out.appendingPathComponent("reference.mp4").path
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", source, "-vf",
                            "zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=tonemap=hable:desat=0,"
                                + "zscale=t=bt709:m=bt709:r=tv,format=yuv420p", "-c:v", "libx264", "-crf", "18",
                            "-an", reference]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0)
        let expected = try Self.decode(reference)
        #expect(abs(ours.meanLuma - expected.meanLuma) / expected.meanLuma < 0.10,
                "mean luma \(ours.meanLuma) vs reference \(expected.meanLuma)")
        // Without tone mapping the PQ picture comes out far darker: the check can fail.
        var keep = Self.single
        keep.toneMapsHDR = false
        let (raw, _) = try Self.transcode(source, keep)
        defer { try? FileManager.default.removeItem(at: raw) }
        let untouched = try Self.decode(raw.appendingPathComponent("720x1280.mp4").path)
        if name == "hdr10_pq.mp4" { #expect(abs(untouched.meanLuma - expected.meanLuma) / expected.meanLuma > 0.10) }
    }

    @Test("interlaced frames are deinterlaced (bwdif): less line-to-line comb energy than the raw fields, same frame count")
    func deinterlace() throws {
        let source = TestFixtures.transcode("interlaced.ts")
        let (out, report) = try Self.transcode(source)
        defer { try? FileManager.default.removeItem(at: out) }
        #expect(report.deinterlaced)
        var off = Self.single
        off.deinterlaces = false
        let (raw, rawReport) = try Self.transcode(source, off)
        defer { try? FileManager.default.removeItem(at: raw) }
        #expect(!rawReport.deinterlaced)
        func comb(_ path: String) throws -> Double {
            let decoder = try VideoDecoder(file: MediaFile(path: path))
            try decoder.seek(to: 1, mode: .exact)
            let frame = try #require(try decoder.nextFrame())
            let y = frame.packedBytes()
            var energy = 0.0
            for row in stride(from: 1, to: frame.height - 1, by: 1) {
                for x in stride(from: 0, to: frame.width, by: 2) {
                    let above = Int(y[(row - 1) * frame.width + x]), here = Int(y[row * frame.width + x])
                    let below = Int(y[(row + 1) * frame.width + x])
                    energy += Double(abs(2 * here - above - below))
                }
            }
            return energy
        }
        let deinterlaced = try comb(out.appendingPathComponent("720x1280.mp4").path)
        let combed = try comb(raw.appendingPathComponent("720x1280.mp4").path)
        #expect(deinterlaced < combed * 0.7, "comb energy \(deinterlaced) vs \(combed) without bwdif")
    }

    @Test("stills and cover art become silent videos of the still duration; an animated GIF keeps its frames")
    func stills() throws {
        for name in ["image.png", "image.jpg", "cover.mp3"] {
            let (out, report) = try Self.transcode(TestFixtures.media(name))
            defer { try? FileManager.default.removeItem(at: out) }
            #expect(report.wasStill, "\(name)")
            #expect(!report.hasAudio, "\(name)")
            let made = try Self.decode(out.appendingPathComponent("720x1280.mp4").path)
            #expect(made.frames == 90, "\(name): 3 s at 30 fps")
            #expect(abs((made.info.primaryVideoStream?.duration ?? 0) - 3) < 0.04, "\(name)")
        }
        let (gif, report) = try Self.transcode(TestFixtures.media("animated.gif"))
        defer { try? FileManager.default.removeItem(at: gif) }
        #expect(!report.wasStill)
        #expect(try Self.decode(gif.appendingPathComponent("720x1280.mp4").path).frames == 10)
    }

    @Test("the segment grid: a short first segment, then equal ones; a time within 0.1 ms before a boundary is after it; hostile times stay in range; a first segment as long as the rest is k·s")
    func segmentGrid() {
        let grid = SegmentGrid(first: 1, seconds: 2)
        #expect((0...3).map(grid.start) == [0, 1, 3, 5])
        #expect(grid.end(0) == 1 && grid.end(2) == 5)
        #expect([-5, 0, 0.99, 0.99995, 1, 2.9, 3, 5.5].map(grid.index(at:)) == [0, 0, 0, 1, 1, 1, 2, 3])
        #expect(grid.index(at: .nan) == 0 && grid.index(at: -.infinity) == 0 && grid.index(at: .infinity) == 0)
        #expect(grid.index(at: 1e300) == 1_000_000_000_000)
        let plain = SegmentGrid(first: 2, seconds: 2)
        #expect((0...3).map(plain.start) == [0, 2, 4, 6] && plain.index(at: 3.9) == 1 && plain.index(at: 4) == 2)
        #expect(SegmentGrid(first: 5, seconds: 2).first == 2)
    }

    @Test("the plan counts a 5.2 s item's segments on its grid: 4 with a 1 s first segment (0, 1, 3, 5 s), 3 with a 2 s one; a first segment under 0.5 s is refused")
    func planCountsOnTheGrid() throws {
        let source = TestFixtures.transcode("long_gop_b.mp4")
        var settings = Self.single
        #expect(try Transcoder(file: MediaFile(path: source), settings: settings).plan.segmentCount == 4)
        settings.firstSegmentSeconds = 2
        #expect(try Transcoder(file: MediaFile(path: source), settings: settings).plan.segmentCount == 3)
        settings.firstSegmentSeconds = 0.2
        #expect(throws: MediaError.self) { try Transcoder(file: MediaFile(path: source), settings: settings) }
    }

    @Test("a WebM whose stream gives no duration: the last frame's start and the video's end are read from its packets (not the container's 1.008 s, which its audio sets), so no empty segment is planned")
    func lastFrameFromThePackets() throws {
        // vp9.webm: 1.008 s in the container, 25 fps, no stream duration. The item starts with the audio at -7 ms,
        // the video at +7 ms: its 25th and last frame starts 0.974 s into the item and ends at 1.014 s.
        let plan = try Transcoder(file: MediaFile(path: TestFixtures.media("vp9.webm")), settings: Self.single).plan
        let last = try #require(plan.lastFrameStart)
        #expect(abs(last - 0.974) < 1e-6)
        #expect(abs(plan.duration - 1.014) < 1e-6 && plan.claimedDuration == 1.008 && plan.segmentCount == 1)
        var settings = Self.single
        settings.firstSegmentSeconds = 0.5
        #expect(try Transcoder(file: MediaFile(path: TestFixtures.media("vp9.webm")), settings: settings).plan.segmentCount == 2)
    }

    @Test("CMAF segments: a 1 s first segment, then one per started 2 s, each starting with a keyframe at its boundary (0, 1, 3, 5 s), a playlist naming them, and the first segment decodes alone after the init")
    func segments() throws {
        let (out, report) = try Self.transcode(TestFixtures.transcode("long_gop_b.mp4"))
        defer { try? FileManager.default.removeItem(at: out) }
        let rendition = try #require(report.renditions.first)
        #expect(rendition.segments.count == 4)
        #expect(rendition.segmentDurations.map { ($0 * 1000).rounded() } == [1000, 2000, 2000, 200])
        let playlist = try String(contentsOf: out.appendingPathComponent(try #require(rendition.playlist)), encoding: .utf8)
        #expect(playlist.contains("#EXT-X-MAP:URI=\"init.mp4\"") && playlist.contains("seg-3.m4s"))
        #expect(playlist.contains("#EXT-X-TARGETDURATION:2") && playlist.contains("#EXTINF:1.000000,\nseg-0.m4s"))
        #expect(playlist.contains("#EXT-X-ENDLIST"))
        let initBytes = try Data(contentsOf: out.appendingPathComponent(try #require(rendition.initSegment)))
        for (k, segment) in rendition.segments.enumerated() {
            let joined = out.appendingPathComponent("joined-\(k).mp4")
            try (initBytes + Data(contentsOf: out.appendingPathComponent(segment))).write(to: joined)
            let decoder = try VideoDecoder(file: MediaFile(path: joined.path))
            let first = try #require(try decoder.nextFrame())
            #expect(first.isKeyframe, "segment \(k) starts with a keyframe")
            #expect(abs(Self.stamp(first) - [0, 1, 3, 5][k]) < 0.001, "segment \(k) starts at \(Self.stamp(first))")
        }
        let master = try String(contentsOf: out.appendingPathComponent("master.m3u8"), encoding: .utf8)
        #expect(master.contains("CODECS=\"\(rendition.codecs)\"") && master.contains("RESOLUTION=640x360"))
    }

    @Test("a later segment made from the first pass's origin, with no pass over the item's start, is byte for byte the one made with it", arguments: [
        "long_gop_b.mp4", "interlaced.ts", "hdr10_rotated_phone.mp4", "anamorphic.mkv",
    ])
    func mediaSegmentFromTheOrigin(name: String) throws {
        let source = TestFixtures.transcode(name)
        var settings = Self.single
        settings.ladder = [Size(width: 720, height: 1280), Size(width: 360, height: 640)]
        // The origin as a server keeps it: from the pass that makes every rendition's init and first segment.
        let first = try Transcoder(file: MediaFile(path: source), settings: settings)
        #expect(first.origin == nil)
        _ = try first.segments(0)
        let origin = try #require(first.origin)
        #expect(origin.firstPictureTimes.count == first.plan.renditions.count)
        let count = first.plan.segmentCount
        #expect(count >= 2)
        for r in first.plan.renditions.indices.reversed() {
            for k in 1..<count {
                let made = try Transcoder(file: MediaFile(path: source), settings: settings).segments(k, renditions: [r])[0]
                let fast = try Transcoder(file: MediaFile(path: source), settings: settings)
                    .segments(k, renditions: [r], origin: origin)[0]
                #expect(fast.initialization.isEmpty)
                #expect(fast.media == made.media, "\(name): rendition \(r) segment \(k)")
                #expect(fast.codecs == made.codecs && fast.start == made.start && fast.frames == made.frames)
            }
        }
        // A wrong origin is used as given (it is the caller's to keep with the item): the segment differs.
        var shifted = origin
        shifted.firstPictureTimes = shifted.firstPictureTimes.mapValues { $0 + 1000 }
        let wrong = try Transcoder(file: MediaFile(path: source), settings: settings)
            .segments(1, renditions: [0], origin: shifted)[0]
        let right = try Transcoder(file: MediaFile(path: source), settings: settings).segments(1, renditions: [0])[0]
        #expect(wrong.media != right.media)
    }

    @Test("a still's later segments need its one picture: given an origin, segments makes them as without one, init included")
    func mediaSegmentOfAStill() throws {
        var settings = Self.single
        settings.stillSeconds = 3
        let transcoder = try Transcoder(file: MediaFile(path: TestFixtures.media("image.jpg")), settings: settings)
        _ = try transcoder.segments(0)
        #expect(transcoder.origin == nil)
        let origin = TranscodeOrigin(display: Size(width: 16, height: 16), firstPictureTimes: ["720x1280": 0])
        let made = try Transcoder(file: MediaFile(path: TestFixtures.media("image.jpg")), settings: settings)
            .segments(1, renditions: [0])[0]
        let fast = try Transcoder(file: MediaFile(path: TestFixtures.media("image.jpg")), settings: settings)
            .segments(1, renditions: [0], origin: origin)[0]
        #expect(!fast.initialization.isEmpty && fast == made)
    }

    @Test("a segment made on demand has the batch's frames at the batch's times, and the rendition's one init")
    func onDemand() throws {
        let source = TestFixtures.transcode("long_gop_b.mp4")
        let (out, report) = try Self.transcode(source)
        defer { try? FileManager.default.removeItem(at: out) }
        let rendition = try #require(report.renditions.first)
        let batchInit = try [UInt8](Data(contentsOf: out.appendingPathComponent(try #require(rendition.initSegment))))
        func times(_ initBytes: [UInt8], _ media: [UInt8], name: String) throws -> [Double] {
            let path = out.appendingPathComponent(name)
            try Data(initBytes + media).write(to: path)
            let decoder = try VideoDecoder(file: MediaFile(path: path.path))
            var result: [Double] = []
            while let frame = try decoder.nextFrame() { result.append((Self.stamp(frame) * 1000).rounded()) }
            return result
        }
        let transcoder = try Transcoder(file: MediaFile(path: source), settings: Self.single)
        for k in [2, 0, 1] {
            let segment = try transcoder.segments(k, renditions: [0])[0]
            #expect(segment.initialization == batchInit, "segment \(k)'s init")
            #expect(segment.codecs == rendition.codecs)
            let batch = try [UInt8](Data(contentsOf: out.appendingPathComponent(rendition.segments[k])))
            let alone = try times(batchInit, segment.media, name: "alone-\(k).mp4")
            #expect(alone == (try times(batchInit, batch, name: "batch-\(k).mp4")), "segment \(k)")
            #expect(alone.first == [0, 1000, 3000][k], "segment \(k) starts at its grid boundary")
        }
        // Many decoder threads hold the first picture back while the audio runs past a segment's window: the
        // segment and the init still come out (they once waited forever for an audio end already given).
        // Every rendition's first segment from one pass is each one's made alone, init and codecs included, and the
        // init is the one made from the first frames alone.
        var ladder = Self.single
        ladder.ladder = [Size(width: 720, height: 1280), Size(width: 540, height: 960), Size(width: 360, height: 640)]
        let all = try Transcoder(file: MediaFile(path: source), settings: ladder)
        let together = try all.segments(0)
        #expect(together.count == all.plan.renditions.count && together.count > 1)
        for r in all.plan.renditions.indices {
            let alone = try Transcoder(file: MediaFile(path: source), settings: ladder).segments(0, renditions: [r])[0]
            #expect(together[r] == alone, "rendition \(r)")
            let initOnly = try Transcoder(file: MediaFile(path: source), settings: ladder).initializationSegment(rendition: r)
            #expect(together[r].initialization == initOnly.bytes && together[r].codecs == initOnly.codecs, "rendition \(r)")
        }
        var threaded = Self.single
        threaded.threads = 16
        let held = try Transcoder(file: MediaFile(path: source), settings: threaded)
        #expect(try held.initializationSegment(rendition: 0).bytes == batchInit)
        #expect(try held.segments(1, renditions: [0])[0].frames == 60)
        #expect(throws: MediaError.self) { try transcoder.segments(4, renditions: [0])[0] }
        #expect(throws: MediaError.self) { try transcoder.segments(0, renditions: [1])[0] }
    }

    /// One rung, no preview, and with `av1` an AV1 rendition of the same box after the H.264 one.
    static func single(av1: Bool) -> TranscodeSettings {
        var settings = single
        if av1 { settings.codecs = [.h264, .av1] }
        return settings
    }

    @Test("every media segment made alone (a fresh Transcoder each, last first) is byte-identical to the batch's file, with the batch's init; H.264 and AV1",
          arguments: [("long_gop_b.mp4", false), ("rotated_phone.mp4", false), ("interlaced.ts", false),
                      ("long_gop_b.mp4", true), ("rotated_phone.mp4", true)])
    func segmentsAloneAreTheBatchBytes(name: String, av1: Bool) throws {
        let source = TestFixtures.transcode(name)
        let settings = Self.single(av1: av1)
        let (out, report) = try Self.transcode(source, settings)
        defer { try? FileManager.default.removeItem(at: out) }
        // The AV1 rendition comes after the H.264 one.
        let index = av1 ? 1 : 0
        #expect(report.renditions.count == index + 1)
        let rendition = try #require(report.renditions.last)
        #expect(rendition.codecs.hasPrefix(av1 ? "av01.0." : "avc1."))
        let batchInit = try [UInt8](Data(contentsOf: out.appendingPathComponent(try #require(rendition.initSegment))))
        let count = try Transcoder(file: MediaFile(path: source), settings: settings).plan.segmentCount
        #expect(rendition.segments.count == count)
        for k in (0..<count).reversed() {
            let alone = try Transcoder(file: MediaFile(path: source), settings: settings).segments(k, renditions: [index])[0]
            let batch = try [UInt8](Data(contentsOf: out.appendingPathComponent("\(rendition.name)/seg-\(k).m4s")))
            let sameMedia = alone.media == batch, sameInit = alone.initialization == batchInit
            #expect(sameMedia, "\(name) segment \(k): \(alone.media.count) bytes alone, \(batch.count) in the batch")
            #expect(sameInit, "\(name) segment \(k)'s init")
        }
    }

    @Test("a segment's bytes do not depend on what the heap held: made with glibc filling every allocation with one byte, then another, then neither, it comes out the same",
          arguments: [("long_gop_b.mp4", false), ("rotated_phone.mp4", false), ("rotated_phone.mp4", true)])
    func segmentBytesIgnoreHeapContents(name: String, av1: Bool) throws {
        let source = TestFixtures.transcode(name)
        var settings = Self.single(av1: av1)
        settings.ladder = [Size(width: 720, height: 1280), Size(width: 360, height: 640)]
        // On a CPU with AVX-512, x264's AVX-512 macroblock tree read memory it had not written: the bytes followed the
        // heap's contents, so a server's segment could differ from the batch's (VideoEncoder.x264Parameters).
        func make(perturbing byte: Int32) throws -> [[UInt8]] {
            Self.mallocPerturb(byte)
            defer { Self.mallocPerturb(0) }
            let transcoder = try Transcoder(file: MediaFile(path: source), settings: settings)
            return try transcoder.segments(0).map(\.media)
                + [transcoder.segments(1, renditions: [transcoder.plan.renditions.count - 1])[0].media]
        }
        let filled = try make(perturbing: 0xA5)
        let other = try make(perturbing: 0x5A)
        let plain = try make(perturbing: 0)
        #expect(filled.count >= 2 && other.count == filled.count && plain.count == filled.count)
        for (i, bytes) in filled.enumerated() {
            #expect(bytes == other[i], "\(name): output \(i) with the heap filled with 0xA5 and with 0x5A")
            #expect(bytes == plain[i], "\(name): output \(i) with the heap filled with 0xA5 and as it was")
        }
    }

    /// glibc's `mallopt(M_PERTURB, byte)`: every block malloc hands out is filled with `byte ^ 0xFF` (0: off). No
    /// effect under a sanitizer (its allocator is not glibc's).
    static func mallocPerturb(_ byte: Int32) {
        AllocatorTuning.mallopt(parameter: -6, value: byte)
    }

    @Test("each segment shows its frames at the source's times, its audio follows the segment before's without overlap, and the playlist ends where the media does: a variable-rate source whose last segment has fewer frames than the encoder's reordering delay (2 s segments from the start), or ends on a rate change inside a reordered group (a 1 s first segment, then 2 s); a video starting 46 ms after its audio",
          arguments: [("vfr.mp4", false, 2.0), ("vfr.mp4", false, 1.0), ("mono_22k.mkv", true, 1.0)])
    func segmentTimesFollowTheSource(name: String, transcodeFixture: Bool, firstSegment: Double) throws {
        let source = transcodeFixture ? TestFixtures.transcode(name) : TestFixtures.media(name)
        // With 2 s from the start, vfr.mp4's last segment is its last two frames (2.0 s and 2.23 s); with a 1 s first
        // segment the last one is [1 s, end), ending on the step from 30 fps to one frame 0.23 s later.
        var settings = Self.single
        settings.firstSegmentSeconds = firstSegment
        let (out, report) = try Self.transcode(source, settings)
        defer { try? FileManager.default.removeItem(at: out) }
        let rendition = try #require(report.renditions.first)
        #expect(rendition.segments.count >= 2)
        var sourceTimes: [Double] = []
        let decoder = try VideoDecoder(file: MediaFile(path: source), options: DecoderOptions(threadCount: 1))
        while let frame = try decoder.nextFrame() { sourceTimes.append((Self.stamp(frame) * 1000).rounded()) }
        let initBytes = try Data(contentsOf: out.appendingPathComponent(try #require(rendition.initSegment)))
        var shown: [Double] = [], end = 0.0
        var audioEnd: Int64? = nil
        for (k, segment) in rendition.segments.enumerated() {
            let media = try Data(contentsOf: out.appendingPathComponent(segment))
            let joined = out.appendingPathComponent("joined-\(k).mp4")
            try (initBytes + media).write(to: joined)
            let decoder = try VideoDecoder(file: MediaFile(path: joined.path), options: DecoderOptions(threadCount: 1))
            var times: [Double] = []
            while let frame = try decoder.nextFrame() { times.append((Self.stamp(frame) * 1000).rounded()) }
            end = max(end, try #require(Fragment.presentedEnd(initialization: [UInt8](initBytes), media: [UInt8](media))))
            let boundary = SegmentGrid(first: settings.firstSegmentSeconds ?? settings.segmentSeconds, seconds: settings.segmentSeconds).start(k) * 1000
            #expect(times.first.map { $0 >= boundary && $0 < boundary + 250 } == true, "segment \(k) starts at \(times)")
            shown += times
            let audio = Fragment.runs(media: [UInt8](media)).first { $0.track == 2 }
            if k > 0, let audio, let before = audioEnd {
                #expect(audio.decodeTime == before, "segment \(k)'s audio starts at \(audio.decodeTime), the one before ends at \(before)")
            }
            audioEnd = audio.map { $0.decodeTime + $0.duration }
        }
        #expect(audioEnd != nil || name == "vfr.mp4", "\(name) has audio")
        #expect(shown == sourceTimes)
        let listed = rendition.segmentDurations.reduce(0, +)
        #expect(abs(end - listed) < 0.002, "media ends at \(end) s, the playlist at \(listed) s")
    }

    @Test("an MPEG-TS with one keyframe: a segment after the first (its seek lands where nothing decodes) is decoded from the start, in the batch and alone, and keeps every frame")
    func oneKeyframeTransportStream() throws {
        let source = TestFixtures.transcode("one_keyframe.ts")
        let (out, report) = try Self.transcode(source)
        defer { try? FileManager.default.removeItem(at: out) }
        let rendition = try #require(report.renditions.first)
        #expect(rendition.segments.count == 3)
        let frames = try Self.decode(source).frames
        #expect(rendition.frames == frames)
        // 25 fps: segment 0 holds [0, 1 s), segment 1 [1 s, 3 s), segment 2 the rest.
        for (k, expected) in [(1, 50), (2, frames - 75)] {
            let alone = try Transcoder(file: MediaFile(path: source), settings: Self.single).segments(k, renditions: [0])[0]
            let batch = try [UInt8](Data(contentsOf: out.appendingPathComponent(rendition.segments[k])))
            #expect(alone.frames == expected && alone.media == batch, "segment \(k): \(alone.frames) frames")
        }
    }

    @Test("an MPEG-TS cut mid-GOP (video 0.42 s after the audio, its first picture 1.3 s in: none in the first segment's second) transcodes: the first segment holds the first pictures, every decoded frame is kept, and each segment made alone is the batch's")
    func cutMidGOPTransportStream() throws {
        let source = TestFixtures.transcode("cut_mid_gop.ts")
        let (out, report) = try Self.transcode(source)
        defer { try? FileManager.default.removeItem(at: out) }
        let rendition = try #require(report.renditions.first)
        let frames = try Self.decode(source).frames
        #expect(frames == 30)
        #expect(rendition.frames == frames)
        let transcoder = try Transcoder(file: MediaFile(path: source), settings: Self.single)
        // The first segment is counted from the first keyframe (1.296 s): [0, 2.296 s), then the rest.
        #expect(rendition.segments.count == transcoder.plan.segmentCount && rendition.segments.count == 2)
        let first = try transcoder.segments(0)[0]
        #expect(first.frames == 25)
        let batchInit = try [UInt8](Data(contentsOf: out.appendingPathComponent(try #require(rendition.initSegment))))
        for k in [1, 0] {
            let alone = try Transcoder(file: MediaFile(path: source), settings: Self.single).segments(k, renditions: [0])[0]
            let batch = try [UInt8](Data(contentsOf: out.appendingPathComponent(rendition.segments[k])))
            #expect(alone.media == batch && alone.initialization == batchInit, "segment \(k)")
        }
    }

    @Test("a pass from the start after a rewind reads what the first pass read: an MPEG-TS whose first keyframe is decoded before the audio starts (the timestamp search lands on the packet after it) gives the preview the main pass's first picture and frame count")
    func rewindReadsFromTheFirstPacket() throws {
        let source = TestFixtures.duration("truncated.ts")
        var settings = Self.single
        settings.preview = PreviewSettings()
        let (out, report) = try Self.transcode(source, settings)
        defer { try? FileManager.default.removeItem(at: out) }
        let rendition = try #require(report.renditions.first)
        let main = try Self.decode(out.appendingPathComponent(try #require(rendition.mp4)).path)
        let preview = try Self.decode(out.appendingPathComponent(try #require(report.previewMP4)).path)
        #expect(main.frames == 60)
        #expect(preview.frames == main.frames)
        #expect(abs(preview.span - main.span) < 0.001, "preview spans \(preview.span) s, the renditions \(main.span) s")
    }

    @Test("a still's segments made on demand: its picture for the segment's span, with the batch's init")
    func stillOnDemand() throws {
        let source = TestFixtures.media("image.jpg")
        let (out, report) = try Self.transcode(source)
        defer { try? FileManager.default.removeItem(at: out) }
        let rendition = try #require(report.renditions.first)
        let batchInit = try [UInt8](Data(contentsOf: out.appendingPathComponent(try #require(rendition.initSegment))))
        let transcoder = try Transcoder(file: MediaFile(path: source), settings: Self.single)
        let second = try transcoder.segments(1, renditions: [0])[0]
        #expect(second.frames == 60, "[1 s, 3 s) at 30 fps")
        #expect(abs(second.start - 1) < 0.001)
        #expect(second.initialization == batchInit)
    }

    @Test("an AV1 set beside the H.264 ladder: a rendition per box named <box>-av1, av01 codec strings in the report and the master playlist, every frame decodable, fewer bytes than H.264")
    func av1Renditions() throws {
        var settings = TranscodeSettings()
        settings.preview = nil
        settings.ladder = [Size(width: 720, height: 1280), Size(width: 360, height: 640)]
        settings.codecs = [.h264, .av1]
        let source = TestFixtures.media("h264_portrait.mp4")
        let (out, report) = try Self.transcode(source, settings)
        defer { try? FileManager.default.removeItem(at: out) }
        #expect(report.renditions.map(\.name) == ["720x1280", "360x640", "720x1280-av1", "360x640-av1"])
        let frames = try Self.decode(source).frames
        for (h264, av1) in zip(report.renditions.prefix(2), report.renditions.suffix(2)) {
            #expect(av1.width == h264.width && av1.height == h264.height)
            #expect(av1.codecs.hasPrefix("av01.0.") && av1.codecs.hasSuffix(".08,mp4a.40.2"), "\(av1.codecs)")
            let made = try Self.decode(out.appendingPathComponent(try #require(av1.mp4)).path)
            #expect(made.info.primaryVideoStream?.codec == "av1")
            #expect(made.frames == frames)
            let bytes = { (path: String?) in
                (try? FileManager.default.attributesOfItem(atPath: out.appendingPathComponent(path ?? "").path)[.size]
                    as? Int) ?? 0
            }
            #expect(bytes(av1.mp4) > 0 && bytes(av1.mp4) < bytes(h264.mp4), "\(av1.name)")
        }
        let master = try String(contentsOf: out.appendingPathComponent(try #require(report.masterPlaylist)), encoding: .utf8)
        #expect(master.contains("CODECS=\"av01.0.") && master.contains("720x1280-av1/index.m3u8"))
        // Run as root (as CI runs), SVT-AV1 starts its threads SCHED_FIFO: none may be left real-time.
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        let realTime = tasks.compactMap { pid_t($0) }.filter { [SCHED_FIFO, SCHED_RR].contains(sched_getscheduler($0)) }
        #expect(realTime.isEmpty, "\(realTime.count) threads run a real-time policy")
    }

    @Test("the AV1 codecs string comes from the sequence header: profile, level and tier, in an OBU or an av1C record")
    func av1CodecString() {
        // libsvtav1's sequence header OBU (type 1, with a size) of a 720x406 rendition: main profile, level 3.0
        // (index 4), main tier, no timing info.
        let obu: [UInt8] = [0x0A, 0x0E, 0x00, 0x00, 0x00, 0x24, 0xC5, 0x9F, 0x95, 0x00, 0xBE, 0x04, 0x04, 0x04, 0x04, 0x10]
        #expect(CodecString.av1(sequenceHeader: obu, bitDepth: 8) == "av01.0.04M.08")
        #expect(CodecString.av1(sequenceHeader: [0x81, 0x04, 0x0C, 0x00] + obu, bitDepth: 10) == "av01.0.04M.10")
        #expect(CodecString.av1(sequenceHeader: [0x12, 0x00], bitDepth: 8) == nil)
    }

    @Test("an untagged source's rendition shows the colours it showed: HD read as BT.709 and kept, SD read as BT.601 and converted",
          arguments: [("1280x720", true), ("640x360", false)])
    func untaggedColour(size: String, hd: Bool) throws {
        let folder = try TestFixtures.temporaryFolder("transcode-colour")
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("green.mp4").path
        // Pure green through libswscale's default (BT.601) into an H.264 stream that names no matrix.
        let clip = try run(URL(fileURLWithPath: "/usr/bin/env"), [
            "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
            "color=c=0x00ff00:size=\(size):rate=25:duration=0.4", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-qp", "0",
            source])
        try #require(clip.status == 0, "\(clip.stderr)")
        func centre(_ path: String) throws -> (luma: Int, green: Int) {
            let frame = try #require(try VideoDecoder(file: MediaFile(path: path)).nextFrame())
            let luma = Int(frame.packedBytes()[(frame.height / 2) * frame.width + frame.width / 2])
            let image = try FrameConverter(pixelFormat: .rgb24, upright: true).convert(frame)
            return (luma, Int(Array(image.pixel(x: image.width / 2, y: image.height / 2))[1]))
        }
        let shown = try centre(source)
        let (out, report) = try Self.transcode(source)
        defer { try? FileManager.default.removeItem(at: out) }
        let made = try centre(out.appendingPathComponent(try #require(report.renditions.first?.mp4)).path)
        // Read as BT.709, BT.601's green (Y 145) is a darker green (G 216); read as BT.601 it is G 255.
        #expect(abs(shown.green - (hd ? 216 : 255)) <= 3, "the source's green as shown: \(shown.green)")
        #expect(abs(made.green - shown.green) <= 3, "rendition G \(made.green) against the source's \(shown.green)")
        // HD: the same Y (no conversion); SD: converted into BT.709's Y for that green (173).
        #expect(abs(made.luma - (hd ? shown.luma : 173)) <= 2, "rendition Y \(made.luma), source Y \(shown.luma)")
    }

    @Test("a stream that changes size midway (two TS captures joined) is transcoded whole at one output size")
    func sizeChange() throws {
        let folder = try TestFixtures.temporaryFolder("transcode-size")
        defer { try? FileManager.default.removeItem(at: folder) }
        var joined = Data()
        for (i, size) in ["320x240", "176x144"].enumerated() {
            let part = folder.appendingPathComponent("part\(i).ts").path
            let ffmpeg = Process()
            ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            ffmpeg.arguments = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                                "testsrc2=size=\(size):rate=25:duration=1", "-c:v", "libx264", "-g", "25",
                                "-output_ts_offset", String(i * 2), part]
            try ffmpeg.run()
            ffmpeg.waitUntilExit()
            try #require(ffmpeg.terminationStatus == 0)
            joined += try Data(contentsOf: URL(fileURLWithPath: part))
        }
        let source = folder.appendingPathComponent("joined.ts")
        try joined.write(to: source)
        let (out, report) = try Self.transcode(source.path)
        defer { try? FileManager.default.removeItem(at: out) }
        let made = try Self.decode(out.appendingPathComponent("720x1280.mp4").path)
        // Every frame the decoder gives (FFmpeg's h264 decoder drops the frames it was still reordering at the
        // switch, as the ffmpeg CLI does): before the fix the second part's frames went into a graph built for the
        // first part's size.
        let decodable = try Self.decode(source.path).frames
        #expect(decodable >= 45)
        #expect(made.frames == decodable)
        #expect(report.renditions.first.map { "\($0.width)x\($0.height)" } == "320x240")
    }

    @Test("bad input fails with a typed error naming the item",
          arguments: [("audio_only.m4a", MediaError.Kind.noVideoStream), ("truncated.mp4", .invalidData),
                      ("empty.mp4", .invalidData), ("random.mp4", .invalidData)])
    func badInput(name: String, kind: MediaError.Kind) throws {
        let path = TestFixtures.bad(name)
        let out = try TestFixtures.temporaryFolder("transcode")
        defer { try? FileManager.default.removeItem(at: out) }
        do {
            _ = try Transcoder(file: MediaFile(path: path, options: .untrusted()), settings: Self.single).run(into: out)
            Issue.record("\(name) transcoded")
        } catch let error as MediaError {
            #expect(error.kind == kind || (name == "random.mp4" && error.kind == .unsupportedFormat), "\(error)")
            #expect(error.item.hasSuffix(name))
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(left.isEmpty, "\(left)")
    }

    @Test("settings a filter or encoder cannot take are refused before any work, naming the setting")
    func badSettings() throws {
        var zeroRate = Self.single
        zeroRate.stillFrameRate = 0
        var preset = Self.single
        preset.video.preset = "warp"
        var ladder = Self.single
        ladder.ladder = []
        for (settings, words) in [(zeroRate, "still frame rate"), (preset, "preset"), (ladder, "ladder")] {
            #expect { try Transcoder(file: MediaFile(path: TestFixtures.media("image.png")), settings: settings) } throws: {
                ($0 as? MediaError)?.kind == .invalidArgument && "\($0)".contains(words)
            }
        }
    }

    @Test("cancelling a running transcode stops it with .cancelled and removes its temporary files",
          .timeLimit(.minutes(2)))
    func cancel() throws {
        // The source comes over HTTP: the open and the plan read it whole, then every later answer stalls halfway
        // (FaultHTTPServer's /later/), so the run has begun writing its outputs under temporary names and cannot end
        // by itself before the cancel.
        let server = try FaultHTTPServer(folder: TestFixtures.folder.appendingPathComponent("transcode").path)
        let token = CancellationToken()
        let out = try TestFixtures.temporaryFolder("transcode")
        defer { try? FileManager.default.removeItem(at: out) }
        var options = OpenOptions()
        options.openTimeout = 120
        options.readTimeout = 120
        let file = try MediaFile(path: server.url("later", "interlaced.ts"), options: options, cancellation: token)
        nonisolated(unsafe) let transcoder = try Transcoder(file: file, settings: Self.single)
        try server.stallLater("interlaced.ts")
        let ended = Locked<Result<TranscodeReport, any Error>?>(nil)
        // The transcoder is handed to the thread and not touched here again.
        Thread.detachNewThread { ended.set(Result { try transcoder.run(into: out) }) }
        func files() -> [String] {
            (FileManager.default.enumerator(atPath: out.path)?.allObjects as? [String]) ?? []
        }
        // Events, not delays: a temporary output appears (the run is under way), then the cancel ends the run.
        #expect(waitFor { files().contains { $0.contains(".tmp-") } || ended.get() != nil })
        #expect(ended.get() == nil, "the run ended before the cancel: \(String(describing: ended.get()))")
        #expect(files().contains { $0.contains(".tmp-") }, "no temporary output while running: \(files())")
        token.cancel()
        #expect(waitFor { ended.get() != nil })
        let error = try #require(throws: MediaError.self) { try ended.get()?.get() }
        #expect(error.kind == .cancelled)
        let left = files()
        #expect(!left.contains { $0.contains(".tmp-") || $0.hasSuffix(".mp4") }, "\(left)")
    }
}

/// Just enough ISO BMFF reading to see a media segment the way Media Source Extensions does: each video sample is
/// shown from its decode time plus composition offset, less the init's edit-list start, for its sample duration.
enum Fragment {
    private static func boxes(_ b: ArraySlice<UInt8>) -> [(type: String, body: ArraySlice<UInt8>)] {
        var result: [(String, ArraySlice<UInt8>)] = []
        var at = b.startIndex
        while at + 8 <= b.endIndex {
            let size = Int(u32(b, at))
            guard size >= 8, at + size <= b.endIndex else { break }
            result.append((String(decoding: b[(at + 4)..<(at + 8)], as: UTF8.self), b[(at + 8)..<(at + size)]))
            at += size
        }
        return result
    }

    private static func u32(_ b: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
        b[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func u64(_ b: ArraySlice<UInt8>, _ at: Int) -> UInt64 {
        UInt64(u32(b, at)) << 32 | UInt64(u32(b, at + 4))
    }

    private static func find(_ path: [String], in b: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard let first = path.first, let box = boxes(b).first(where: { $0.type == first }) else { return nil }
        return path.count == 1 ? box.body : find(Array(path.dropFirst()), in: box.body)
    }

    /// Each track fragment of `media`: its track, first decode time and summed sample durations (its time scale).
    static func runs(media: [UInt8]) -> [(track: Int, decodeTime: Int64, duration: Int64)] {
        guard let moof = find(["moof"], in: media[...]) else { return [] }
        return boxes(moof).filter { $0.type == "traf" }.compactMap { traf in
            guard let tfhd = find(["tfhd"], in: traf.body), let tfdt = find(["tfdt"], in: traf.body),
                  let trun = find(["trun"], in: traf.body) else { return nil }
            let track = Int(u32(tfhd, tfhd.startIndex + 4))
            var at = tfhd.startIndex + 8
            let tfhdFlags = u32(tfhd, tfhd.startIndex) & 0xFFFFFF
            if tfhdFlags & 1 != 0 { at += 8 }
            if tfhdFlags & 2 != 0 { at += 4 }
            let defaultDuration = tfhdFlags & 8 != 0 ? Int64(u32(tfhd, at)) : 0
            let base = tfdt[tfdt.startIndex] == 1 ? Int64(bitPattern: u64(tfdt, tfdt.startIndex + 4))
                : Int64(u32(tfdt, tfdt.startIndex + 4))
            let flags = u32(trun, trun.startIndex) & 0xFFFFFF
            let count = Int(u32(trun, trun.startIndex + 4))
            at = trun.startIndex + 8 + (flags & 1 != 0 ? 4 : 0) + (flags & 4 != 0 ? 4 : 0)
            var total: Int64 = 0
            for _ in 0..<count {
                var duration = defaultDuration
                if flags & 0x100 != 0 { duration = Int64(u32(trun, at)); at += 4 }
                if flags & 0x200 != 0 { at += 4 }
                if flags & 0x400 != 0 { at += 4 }
                if flags & 0x800 != 0 { at += 4 }
                total += duration
            }
            return (track, base, total)
        }
    }

    /// The latest time (seconds) a video sample of `media` is shown until; track 1 is the video.
    static func presentedEnd(initialization: [UInt8], media: [UInt8]) -> Double? {
        let moov = initialization[...]
        guard let mdhd = find(["moov", "trak", "mdia", "mdhd"], in: moov) else { return nil }
        let v1 = mdhd[mdhd.startIndex] == 1
        let scale = Double(u32(mdhd, mdhd.startIndex + (v1 ? 20 : 12)))
        // The edit list: an empty edit first (the track starts later than the movie) shifts it by its duration
        // (in the movie's time scale); the next edit's media time is where the track's shown media starts.
        var editStart = 0.0, emptyEdit = 0.0
        if let elst = find(["moov", "trak", "edts", "elst"], in: moov), let mvhd = find(["moov", "mvhd"], in: moov) {
            let s = elst.startIndex, v1 = elst[s] == 1, size = v1 ? 20 : 12
            let movieScale = Double(u32(mvhd, mvhd.startIndex + (mvhd[mvhd.startIndex] == 1 ? 20 : 12)))
            var entries: [(duration: Double, mediaTime: Double)] = []
            for n in 0..<Int(u32(elst, s + 4)) {
                let at = s + 8 + n * size
                entries.append(v1 ? (Double(u64(elst, at)), Double(Int64(bitPattern: u64(elst, at + 8))))
                                  : (Double(u32(elst, at)), Double(Int32(bitPattern: u32(elst, at + 4)))))
            }
            if let first = entries.first, first.mediaTime == -1 {
                emptyEdit = first.duration / movieScale
                entries.removeFirst()
            }
            editStart = entries.first?.mediaTime ?? 0
        }
        guard let traf = find(["moof", "traf"], in: media[...]), let tfhd = find(["tfhd"], in: traf),
              let tfdt = find(["tfdt"], in: traf), let trun = find(["trun"], in: traf) else { return nil }
        var at = tfhd.startIndex + 8
        let tfhdFlags = u32(tfhd, tfhd.startIndex) & 0xFFFFFF
        if tfhdFlags & 1 != 0 { at += 8 }
        if tfhdFlags & 2 != 0 { at += 4 }
        let defaultDuration = tfhdFlags & 8 != 0 ? Double(u32(tfhd, at)) : 0
        var decode = tfdt[tfdt.startIndex] == 1 ? Double(u64(tfdt, tfdt.startIndex + 4)) : Double(u32(tfdt, tfdt.startIndex + 4))
        let flags = u32(trun, trun.startIndex) & 0xFFFFFF
        let count = Int(u32(trun, trun.startIndex + 4))
        at = trun.startIndex + 8 + (flags & 1 != 0 ? 4 : 0) + (flags & 4 != 0 ? 4 : 0)
        var end = -Double.infinity
        for _ in 0..<count {
            var duration = defaultDuration, offset = 0.0
            if flags & 0x100 != 0 { duration = Double(u32(trun, at)); at += 4 }
            if flags & 0x200 != 0 { at += 4 }
            if flags & 0x400 != 0 { at += 4 }
            if flags & 0x800 != 0 { offset = Double(Int32(bitPattern: u32(trun, at))); at += 4 }
            end = max(end, decode + offset - editStart + duration)
            decode += duration
        }
        return count > 0 ? emptyEdit + end / scale : nil
    }
}
