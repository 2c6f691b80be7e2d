package import CFFmpeg
import EngineSupport
import Foundation

/// How the feed rendition's H.264 is encoded: libx264 with the ffmpeg CLI's option names and meanings.
public struct VideoEncoding: Sendable, Hashable, Codable {
    /// x264's constant rate factor (`-crf`): 0–51, lower is better; 23 is x264's default.
    public var crf: Double = 23
    /// x264's speed preset (`-preset`): `ultrafast` … `placebo`.
    public var preset: String = "veryfast"
    /// The H.264 profile (`-profile:v`): `baseline`, `main` or `high`.
    public var profile: String = "high"
    /// x264's (frame) threads. One by default, because with the VBV cap every rendition has, x264's rate control
    /// with more than one thread (frame or sliced) reads how far the other threads have got, so the same segment
    /// came out in two or three versions from one binary (`fire2.mp4`'s segments, measured: 8 of 8 runs identical
    /// with one thread or without the cap, 2–3 versions in 8 runs with 4 frame or 4 sliced threads). Byte-identical
    /// segments are what lets a batch, a server and its replicas share one cache. More threads make one encoder
    /// faster (a 1080x1920 segment in ~1.25 s instead of ~1.9 s on 2 cores) but not repeatable; the batch and the
    /// server keep the cores busy with several encoders at once instead. 0 lets x264 choose.
    public var threads: Int = 1

    /// The defaults described on each property.
    public init(crf: Double = 23, preset: String = "veryfast", profile: String = "high", threads: Int = 1) {
        self.crf = crf
        self.preset = preset
        self.profile = profile
        self.threads = threads
    }

    /// The presets x264 knows.
    public static let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower",
                                 "veryslow", "placebo"]
}

/// A rendition's video codec.
public enum VideoCodec: String, Sendable, Hashable, Codable, CaseIterable {
    /// H.264 High through libx264 (``VideoEncoding``): what every browser and phone plays.
    case h264
    /// AV1 Main through SVT-AV1 (FFmpeg's `libsvtav1`, ``AV1Encoding``): fewer bytes for the clients that decode it.
    case av1
}

/// How an AV1 rendition is encoded: SVT-AV1 through FFmpeg's `libsvtav1`, with its option names and meanings.
public struct AV1Encoding: Sendable, Hashable, Codable {
    /// SVT-AV1's constant rate factor (`-crf`): 0–63, lower is better. 42 with preset 8 makes the real clips of
    /// docs/benchmarks.md 42.1 % smaller than x264's crf 23 rungs at about the same mean SSIM (+0.0002).
    public var crf: Int = 42
    /// SVT-AV1's preset (`-preset`): 0 (slowest) … 13 (fastest). 8 costs about 2.9× x264 veryfast's CPU; 10 costs
    /// 1.6× but saves less at the same SSIM (13–43 % against 25–57 % per clip).
    public var preset: Int = 8

    /// The defaults described on each property.
    public init(crf: Int = 42, preset: Int = 8) {
        self.crf = crf
        self.preset = preset
    }
}

/// A video encoder for yuv420p 8-bit BT.709 pictures, owning its `AVCodecContext`: H.264 (libx264) or AV1
/// (libsvtav1).
///
/// A frame can be marked to become an IDR picture (a segment boundary): libx264's `forced-idr`, as the ffmpeg CLI's
/// `-force_key_frames` with `-forced-idr 1`. Closed GOPs (x264's default). Packets come out in decode order.
package final class VideoEncoder {
    package let context: UnsafeMutablePointer<AVCodecContext>
    package let item: String
    package let codec: VideoCodec

    /// - Parameters:
    ///   - codec: H.264 with `encoding`'s settings, or AV1 with `av1`'s.
    ///   - maxBitrate: the VBV cap (`-maxrate`) in bits per second; the buffer (`-bufsize`) is twice as large. H.264
    ///     only: SVT-AV1 1.4 takes a cap in its CRF mode, but on clips of a few seconds it moved the quality
    ///     erratically (a 0.6 s 4K clip lost 0.005 SSIM to it at crf 40), and the AV1 rung spends about 40 % less
    ///     than the H.264 one's cap allows anyway.
    ///   - globalHeader: parameter sets in the codec's extradata (what MP4 wants), not in the stream.
    ///   - x264InstructionSets: x264's `asm`, the vector code it may run (`"SSE2"`, `"0"` for plain C), to make here
    ///     what another CPU would make; nil lets x264 detect this CPU's.
    ///   - x264Canonical: x264's `cpu-independent` (``x264Parameters(instructionSets:canonical:)``); false only in
    ///     tests, to show what it changes.
    /// - Throws: ``MediaError`` `unsupportedCodec` when this FFmpeg has no libx264 (libsvtav1), or the codec's refusal.
    package init(width: Int, height: Int, timeBase: AVRational, frameRate: AVRational, codec: VideoCodec = .h264,
         encoding: VideoEncoding, av1: AV1Encoding = AV1Encoding(), maxBitrate: Int?, globalHeader: Bool,
         item: String, x264InstructionSets: String? = nil, x264Canonical: Bool = true) throws {
        self.item = item
        self.codec = codec
        if codec == .av1 {
            context = try VideoEncoder.openAV1(width: width, height: height, timeBase: timeBase, frameRate: frameRate,
                                               encoding: av1, globalHeader: globalHeader, item: item)
            return
        }
        context = try Codec.open(avcodec_find_encoder_by_name("libx264"), name: "libx264", item: item, options: [
            "preset": encoding.preset, "profile": encoding.profile, "crf": String(encoding.crf), "forced-idr": "1",
            "x264-params": VideoEncoder.x264Parameters(instructionSets: x264InstructionSets, canonical: x264Canonical),
        ]) { ctx in
            VideoEncoder.describePictures(ctx, width: width, height: height, timeBase: timeBase, frameRate: frameRate)
            ctx.pointee.thread_count = Int32(min(max(0, encoding.threads), 64))
            if let maxBitrate {
                ctx.pointee.rc_max_rate = Int64(maxBitrate)
                ctx.pointee.rc_buffer_size = Int32(clamping: maxBitrate * 2)
            }
            if globalHeader { ctx.pointee.flags |= Int32(vf_codec_flag_global_header()) }
        }
    }

    /// SVT-AV1 (`libsvtav1`) with `encoding`'s preset and CRF, one keyframe per session (each segment is one). SVT-AV1
    /// runs threads of its own, as many as the cores; its output does not depend on them (the same bytes with
    /// `lp=1`, 2 and 4 and on one pinned core, measured). It logs to standard error itself, not through FFmpeg's
    /// log, at the level of the `SVT_LOG` environment variable, which `videofeed` sets to errors only at its start.
    private static func openAV1(width: Int, height: Int, timeBase: AVRational, frameRate: AVRational,
                                encoding: AV1Encoding, globalHeader: Bool, item: String) throws
        -> UnsafeMutablePointer<AVCodecContext> {
        // SVT-AV1 encoders open and close one at a time (``svtLifecycle``).
        try svtLifecycle.withLock {
            defer { leaveRealTime() }
            return try Codec.open(avcodec_find_encoder_by_name("libsvtav1"), name: "libsvtav1", item: item, options: [
                "preset": String(encoding.preset), "crf": String(encoding.crf),
            ]) { ctx in
                VideoEncoder.describePictures(ctx, width: width, height: height, timeBase: timeBase,
                                              frameRate: frameRate)
                // Longer than any segment: the session's first picture is its one keyframe.
                ctx.pointee.gop_size = 600
                if globalHeader { ctx.pointee.flags |= Int32(vf_codec_flag_global_header()) }
            }
        }
    }

    /// Held while an SVT-AV1 encoder opens (``openAV1``) and while one is freed (`deinit`). SVT-AV1 1.4 keeps the
    /// CPU topology it reads when an encoder opens in one process-wide pointer (`lp_group` in its `enc_handle.c`):
    /// every open allocates it anew and clears it with a `memset`, every close frees it and sets it to null, whatever
    /// other encoders are doing. One encoder closing while another opened crashed the opening one in that `memset`
    /// (a write of 65,600 bytes — 16 processor groups — through a null pointer, in `make test` and under
    /// AddressSanitizer), and two closing at once freed it twice (glibc's "double free"; SVTLifecycleTests, 160
    /// encoders on four threads: one run in three without the lock around the close, none in four with it).
    /// Encoding itself runs in parallel: nothing else in SVT-AV1 1.4 touches that pointer after the open.
    private static let svtLifecycle = Lock()

    /// Puts every thread of this process that runs a real-time policy back on `SCHED_OTHER`. Run as root, SVT-AV1
    /// 1.4 gives the threads it starts when an encoder opens `SCHED_FIFO` (measured: `ffmpeg -c:v libsvtav1` as root
    /// runs 101 FIFO threads); on 2 cores they starved everything else in the process, the server's and the tests'
    /// threads included, and threads they touched stayed FIFO. Nothing of ours runs real-time, so any thread found
    /// so is one of these.
    private static func leaveRealTime() {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return }
        for task in tasks {
            guard let tid = pid_t(task) else { continue }
            let policy = sched_getscheduler(tid)
            guard policy == SCHED_FIFO || policy == SCHED_RR else { continue }
            var parameters = sched_param(sched_priority: 0)
            _ = sched_setscheduler(tid, SCHED_OTHER, &parameters)
        }
    }

    /// What every rendition's pictures are: yuv420p 8-bit BT.709 limited range, square pixels, at `frameRate`.
    private static func describePictures(_ ctx: UnsafeMutablePointer<AVCodecContext>, width: Int, height: Int,
                                         timeBase: AVRational, frameRate: AVRational) {
        ctx.pointee.width = Int32(width)
        ctx.pointee.height = Int32(height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        ctx.pointee.time_base = timeBase
        ctx.pointee.framerate = frameRate
        ctx.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        ctx.pointee.color_range = AVCOL_RANGE_MPEG
        ctx.pointee.color_primaries = AVCOL_PRI_BT709
        ctx.pointee.color_trc = AVCOL_TRC_BT709
        ctx.pointee.colorspace = AVCOL_SPC_BT709
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        if codec == .av1 {
            VideoEncoder.svtLifecycle.withLock { avcodec_free_context(&ctx) }
        } else {
            avcodec_free_context(&ctx)
        }
    }

    /// x264's parameters beyond FFmpeg's options: `cpu-independent=1` (with `canonical`), x264's one algorithm on
    /// every CPU. x264 runs the vector code of the CPU it finds, which gives the same results as its C code but in
    /// two places: the macroblock tree's propagation, a floating-point sum that each instruction set rounds its own
    /// way, and the shortcuts of its intra mode search that exist in assembly only. Debian's x264 (0.164.3095) also
    /// reads memory it has not written in its AVX-512 propagation, so on an AVX-512 CPU the bytes followed what the
    /// heap held (a batch over four copies of one clip made 36 distinct segments where 18 were expected, and a
    /// server's on-demand segments differed from the batch's). `cpu-independent` takes x264's C code for those two
    /// and keeps the CPU's vector code for everything else: the same bytes with AVX-512, AVX2, SSE2 or no vector
    /// code at all, and with any heap contents (`X264CanonicalTests`), at about 3 % more x264 time than its own
    /// choice, where holding x264 to AVX2 on this AVX-512 CPU cost 12–15 %.
    package static func x264Parameters(instructionSets: String? = nil, canonical: Bool = true) -> String {
        ["cpu-independent=\(canonical ? 1 : 0)", instructionSets.map { "asm=\($0)" }].compactMap { $0 }.joined(separator: ":")
    }

    /// The MSE/RFC 6381 codec string from the encoder's extradata: `avc1.PPCCLL` from H.264's SPS,
    /// `av01.P.LLT.DD` from AV1's sequence header.
    package var codecString: String {
        let size = Int(context.pointee.extradata_size)
        let bytes = context.pointee.extradata.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        if codec == .av1 { return CodecString.av1(sequenceHeader: bytes, bitDepth: 8) ?? "av01.0.08M.08" }
        guard bytes.count > 4 else { return "avc1.640028" }
        return CodecString.avc(extradata: bytes) ?? "avc1.640028"
    }

    /// Whether the item was cancelled: checked after each packet, so that a long drain (x264's lookahead and frame
    /// threads hold many frames) stops too.
    package var isCancelled: () -> Bool = { false }

    /// Encodes `frame` (nil drains the encoder) and returns the packets that came out, in decode order.
    package func encode(_ frame: UnsafeMutablePointer<AVFrame>?) throws -> [Packet] {
        try Codec.encode(context, frame, item: item, isCancelled: isCancelled)
    }
}

/// An AAC-LC encoder (FFmpeg's native `aac`), stereo, planar float, 1024 samples a frame.
package final class AudioEncoder {
    package let context: UnsafeMutablePointer<AVCodecContext>
    package let item: String

    /// - Throws: ``MediaError`` when the encoder cannot be opened.
    package init(sampleRate: Int, bitRate: Int, globalHeader: Bool, item: String) throws {
        self.item = item
        context = try Codec.open(avcodec_find_encoder(AV_CODEC_ID_AAC), name: "AAC", item: item, options: [:]) { ctx in
            ctx.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
            ctx.pointee.sample_rate = Int32(sampleRate)
            av_channel_layout_default(&ctx.pointee.ch_layout, 2)
            ctx.pointee.bit_rate = Int64(bitRate)
            ctx.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
            if globalHeader { ctx.pointee.flags |= Int32(vf_codec_flag_global_header()) }
        }
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&ctx)
    }

    package var frameSize: Int { Int(max(context.pointee.frame_size, 1)) }
    package var sampleRate: Int { Int(context.pointee.sample_rate) }

    /// Encodes `frame` (nil drains the encoder) and returns the packets that came out.
    package func encode(_ frame: UnsafeMutablePointer<AVFrame>?) throws -> [Packet] {
        try Codec.encode(context, frame, item: item)
    }
}

/// A WebP animation encoder (libwebp_anim) for the card preview.
package final class WebPEncoder {
    package let context: UnsafeMutablePointer<AVCodecContext>
    package let item: String

    package init(width: Int, height: Int, timeBase: AVRational, quality: Int, item: String) throws {
        self.item = item
        context = try Codec.open(avcodec_find_encoder_by_name("libwebp_anim"), name: "libwebp_anim", item: item,
                                 options: ["quality": String(quality), "preset": "picture"]) { ctx in
            ctx.pointee.width = Int32(width)
            ctx.pointee.height = Int32(height)
            ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
            ctx.pointee.time_base = timeBase
            ctx.pointee.compression_level = 3
        }
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&ctx)
    }

    package func encode(_ frame: UnsafeMutablePointer<AVFrame>?) throws -> [Packet] {
        try Codec.encode(context, frame, item: item)
    }
}

/// What every encoder shares: opening (`avcodec_alloc_context3`, the caller's settings, `avcodec_open2`, freed on
/// failure) and the send/receive loop.
package enum Codec {
    /// Opens `codec` (nil: this FFmpeg lacks it) with `configure` applied to the context and `options` given to
    /// `avcodec_open2`. The caller owns the context and frees it with `avcodec_free_context`.
    package static func open(_ codec: UnsafePointer<AVCodec>?, name: String, item: String, options: [String: String],
                     configure: (UnsafeMutablePointer<AVCodecContext>) -> Void) throws
        -> UnsafeMutablePointer<AVCodecContext> {
        guard let codec else {
            throw MediaError(.unsupportedCodec, operation: "open encoder", item: item,
                             message: "this FFmpeg has no \(name) encoder")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw MediaError(.limitExceeded, operation: "open encoder", item: item, message: "out of memory")
        }
        configure(ctx)
        var dict: OpaquePointer? = nil
        for (key, value) in options.sorted(by: { $0.key < $1.key }) { av_dict_set(&dict, key, value, 0) }
        defer { av_dict_free(&dict) }
        let opened = avcodec_open2(ctx, codec, &dict)
        guard opened >= 0 else {
            var owned: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&owned)
            throw MediaError.ffmpeg(opened, operation: "open encoder", item: item)
        }
        return ctx
    }

    package static func encode(_ ctx: UnsafeMutablePointer<AVCodecContext>, _ frame: UnsafeMutablePointer<AVFrame>?,
                       item: String, isCancelled: () -> Bool = { false }) throws -> [Packet] {
        let sent = avcodec_send_frame(ctx, frame)
        // EOF only answers a second drain; a frame sent after the drain is an error, not silently dropped.
        if sent < 0 && !(sent == vf_averror_eof() && frame == nil) {
            throw MediaError.ffmpeg(sent, operation: "encode", item: item)
        }
        var out: [Packet] = []
        while true {
            guard let packet = Packet() else {
                throw MediaError(.limitExceeded, operation: "encode", item: item, message: "out of memory")
            }
            let result = avcodec_receive_packet(ctx, packet.raw)
            if result == vf_averror_eagain() || result == vf_averror_eof() { return out }
            guard result >= 0 else { throw MediaError.ffmpeg(result, operation: "encode", item: item) }
            // Encoders give packets in their own time base; muxers rescale from it.
            packet.raw.pointee.time_base = ctx.pointee.time_base
            out.append(packet)
            if isCancelled() {
                throw MediaError(.cancelled, operation: "encode", item: item, message: "cancelled by the caller")
            }
        }
    }
}

/// RFC 6381 codec strings, as `MediaSource.isTypeSupported` and HLS `CODECS` attributes want them.
public enum CodecString {
    /// `avc1.PPCCLL` from H.264 extradata: Annex B parameter sets (start codes) or an `avcC` record.
    package static func avc(extradata bytes: [UInt8]) -> String? {
        func hex(_ b: UInt8) -> String { String(format: "%02x", b) }
        if bytes.count >= 4, bytes[0] == 1 {
            // avcC: version, profile, compatibility, level.
            return "avc1." + hex(bytes[1]) + hex(bytes[2]) + hex(bytes[3])
        }
        var i = 0
        while i + 4 < bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                let nal = bytes[i + 3]
                if nal & 0x1f == 7, i + 6 < bytes.count {
                    return "avc1." + hex(bytes[i + 4]) + hex(bytes[i + 5]) + hex(bytes[i + 6])
                }
                i += 3
            } else {
                i += 1
            }
        }
        return nil
    }

    /// `av01.P.LLT.DD` (the AV1 codecs parameter of the AV1-in-ISOBMFF binding, its optional fields left out) from an
    /// AV1 sequence header OBU as libsvtav1 puts it in the extradata, or from an `av1C` record holding one; nil when
    /// it is neither. `bitDepth` is the pictures' (the sequence header's colour config is not parsed).
    package static func av1(sequenceHeader bytes: [UInt8], bitDepth: Int) -> String? {
        var data = bytes[...]
        // av1C: marker and version 1, then three bytes of fields, then the configuration OBUs.
        if let first = data.first, first == 0x81, data.count > 4 { data = data.dropFirst(4) }
        // The OBU header: type 1 is a sequence header; an extension byte and a size may follow.
        guard let header = data.first, (header >> 3) & 0xf == 1 else { return nil }
        data = data.dropFirst(header & 0x04 != 0 ? 2 : 1)
        if header & 0x02 != 0 {
            // leb128 size.
            var count = 0
            while let byte = data.first, count < 8 {
                data = data.dropFirst()
                count += 1
                if byte & 0x80 == 0 { break }
            }
        }
        var reader = BitReader(Array(data))
        func bits(_ count: Int) -> Int? { reader.read(count).map(Int.init) }
        guard let profile = bits(3), bits(1) != nil, let reduced = bits(1) else { return nil }
        var level = 0, tier = 0
        if reduced == 1 {
            guard let l = bits(5) else { return nil }
            level = l
        } else {
            guard let timing = bits(1) else { return nil }
            var decoderModel = 0, delayLength = 0
            if timing == 1 {
                guard bits(32) != nil, bits(32) != nil, let equal = bits(1) else { return nil }
                if equal == 1 { guard reader.ue() != nil else { return nil } }
                guard let model = bits(1) else { return nil }
                decoderModel = model
                if model == 1 {
                    guard let length = bits(5), bits(32) != nil, bits(5) != nil,
                          bits(5) != nil else { return nil }
                    delayLength = length + 1
                }
            }
            guard let displayDelay = bits(1), let count = bits(5) else { return nil }
            for op in 0...count {
                guard bits(12) != nil, let l = bits(5) else { return nil }
                var t = 0
                if l > 7 { guard let v = bits(1) else { return nil }; t = v }
                if op == 0 { level = l; tier = t }
                if decoderModel == 1 {
                    guard let present = bits(1) else { return nil }
                    if present == 1 {
                        guard bits(delayLength) != nil, bits(delayLength) != nil,
                              bits(1) != nil else { return nil }
                    }
                }
                if displayDelay == 1 {
                    guard let present = bits(1) else { return nil }
                    if present == 1 { guard bits(4) != nil else { return nil } }
                }
            }
        }
        return "av01.\(profile).\(String(format: "%02d", level))\(tier == 1 ? "H" : "M").\(String(format: "%02d", bitDepth))"
    }

    /// AAC-LC.
    public static let aacLC = "mp4a.40.2"

    /// `av01.0.LLM.08`: the codecs string of the 8-bit 4:2:0 AV1 an ``AV1Encoding`` makes of `width`×`height`
    /// pictures at `frameRate` per second, without opening an encoder — what ``av1(sequenceHeader:bitDepth:)`` reads
    /// from the sequence header libsvtav1 writes for them: Main profile, main tier, the level ``av1Level`` gives.
    public static func av1(width: Int, height: Int, frameRate: Double) -> String {
        "av01.0.\(String(format: "%02d", av1Level(width: width, height: height, frameRate: frameRate)))M.08"
    }

    /// The AV1 level (`seq_level_idx`) SVT-AV1 chooses for `width`×`height` pictures at `frameRate`: the first
    /// level of the AV1 specification's table (annex A.3) whose picture size, width, height and display rate
    /// (pixels a second) hold them; 31 (no level) past the table. Checked against libsvtav1 1.4's own choice for
    /// 64 sizes and rates (180x320 to 2160x3840, 15 to 120 per second, landscape and portrait).
    package static func av1Level(width: Int, height: Int, frameRate: Double) -> Int {
        let picture = Double(width) * Double(height)
        let rate = picture * (frameRate.isFinite && frameRate > 0 ? frameRate : 30)
        for level in av1Levels where picture <= level.picture && width <= level.width && height <= level.height
            && rate <= level.displayRate {
            return level.index
        }
        return 31
    }

    /// The AV1 specification's levels (annex A.3, the defined ones): `seq_level_idx`, MaxPicSize, MaxHSize,
    /// MaxVSize, MaxDisplayRate.
    private static let av1Levels: [(index: Int, picture: Double, width: Int, height: Int, displayRate: Double)] = [
        (0, 147_456, 2048, 1152, 4_423_680), (1, 278_784, 2816, 1584, 8_363_520),
        (4, 665_856, 4352, 2448, 19_975_680), (5, 1_065_024, 5504, 3096, 31_950_720),
        (8, 2_359_296, 6144, 3456, 70_778_880), (9, 2_359_296, 6144, 3456, 141_557_760),
        (12, 8_912_896, 8192, 4352, 267_386_880), (13, 8_912_896, 8192, 4352, 534_773_760),
        (14, 8_912_896, 8192, 4352, 1_069_547_520), (15, 8_912_896, 8192, 4352, 1_069_547_520),
        (16, 35_651_584, 16384, 8704, 1_069_547_520), (17, 35_651_584, 16384, 8704, 2_139_095_040),
        (18, 35_651_584, 16384, 8704, 4_278_190_080), (19, 35_651_584, 16384, 8704, 4_278_190_080),
    ]
}

