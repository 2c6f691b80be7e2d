internal import CFFmpeg
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

/// An H.264 encoder (libx264) for yuv420p 8-bit BT.709 pictures, owning its `AVCodecContext`.
///
/// A frame can be marked to become an IDR picture (a segment boundary): libx264's `forced-idr`, as the ffmpeg CLI's
/// `-force_key_frames` with `-forced-idr 1`. Closed GOPs (x264's default). Packets come out in decode order.
final class VideoEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let item: String

    /// - Parameters:
    ///   - maxBitrate: the VBV cap (`-maxrate`) in bits per second; the buffer (`-bufsize`) is twice as large.
    ///   - globalHeader: parameter sets in the codec's extradata (what MP4 wants), not in the stream.
    /// - Throws: ``MediaError`` `unsupportedCodec` when this FFmpeg has no libx264, or the codec's refusal.
    init(width: Int, height: Int, timeBase: AVRational, frameRate: AVRational, encoding: VideoEncoding,
         maxBitrate: Int?, globalHeader: Bool, item: String) throws {
        self.item = item
        context = try Codec.open(avcodec_find_encoder_by_name("libx264"), name: "libx264", item: item, options: [
            "preset": encoding.preset, "profile": encoding.profile, "crf": String(encoding.crf), "forced-idr": "1",
        ].merging(VideoEncoder.x264CPU) { ours, _ in ours }) { ctx in
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
            ctx.pointee.thread_count = Int32(min(max(0, encoding.threads), 64))
            if let maxBitrate {
                ctx.pointee.rc_max_rate = Int64(maxBitrate)
                ctx.pointee.rc_buffer_size = Int32(clamping: maxBitrate * 2)
            }
            if globalHeader { ctx.pointee.flags |= Int32(vf_codec_flag_global_header()) }
        }
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&ctx)
    }

    /// x264's instruction sets, where its own choice would make output that is not repeatable: on a CPU with
    /// AVX-512, x264's AVX-512 code (Debian's 0.164.3095) makes bytes that depend on what uninitialised heap memory
    /// held, so the same segment came out differently from one encoder to the next in one process: the first item
    /// of a batch over four copies of one clip matched a segment made alone and the others did not (36 distinct
    /// segments where 18 were expected; with glibc's `malloc.perturb`, 18, and other bytes for another perturb
    /// value), and a server's on-demand segments differed from the batch's (33 of 120 files in a load test).
    /// Capped at AVX2 (`asm=AVX2`, which every AVX-512 CPU has), the output is the same with any heap contents,
    /// concurrency or perturb value, and is what x264's SSE4 code makes too; the speed is the same within the noise
    /// (a 4-item batch: 24.0–25.9 s against 25.3 s). Elsewhere x264 detects the CPU itself.
    static let x264CPU: [String: String] = vf_cpu_has_avx512() != 0 ? ["x264-params": "asm=AVX2"] : [:]

    /// The MSE/RFC 6381 codec string, `avc1.PPCCLL`, from the SPS in the encoder's extradata.
    var codecString: String {
        let size = Int(context.pointee.extradata_size)
        guard let data = context.pointee.extradata, size > 4 else { return "avc1.640028" }
        let bytes = Array(UnsafeBufferPointer(start: data, count: size))
        return CodecString.avc(extradata: bytes) ?? "avc1.640028"
    }

    /// Whether the item was cancelled: checked after each packet, so that a long drain (x264's lookahead and frame
    /// threads hold many frames) stops too.
    var isCancelled: () -> Bool = { false }

    /// Encodes `frame` (nil drains the encoder) and returns the packets that came out, in decode order.
    func encode(_ frame: UnsafeMutablePointer<AVFrame>?) throws -> [Packet] {
        try Codec.encode(context, frame, item: item, isCancelled: isCancelled)
    }
}

/// An AAC-LC encoder (FFmpeg's native `aac`), stereo, planar float, 1024 samples a frame.
final class AudioEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let item: String

    /// - Throws: ``MediaError`` when the encoder cannot be opened.
    init(sampleRate: Int, bitRate: Int, globalHeader: Bool, item: String) throws {
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

    var frameSize: Int { Int(max(context.pointee.frame_size, 1)) }
    var sampleRate: Int { Int(context.pointee.sample_rate) }

    /// Encodes `frame` (nil drains the encoder) and returns the packets that came out.
    func encode(_ frame: UnsafeMutablePointer<AVFrame>?) throws -> [Packet] {
        try Codec.encode(context, frame, item: item)
    }
}

/// A WebP animation encoder (libwebp_anim) for the card preview.
final class WebPEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let item: String

    init(width: Int, height: Int, timeBase: AVRational, quality: Int, item: String) throws {
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

    func encode(_ frame: UnsafeMutablePointer<AVFrame>?) throws -> [Packet] {
        try Codec.encode(context, frame, item: item)
    }
}

/// What every encoder shares: opening (`avcodec_alloc_context3`, the caller's settings, `avcodec_open2`, freed on
/// failure) and the send/receive loop.
enum Codec {
    /// Opens `codec` (nil: this FFmpeg lacks it) with `configure` applied to the context and `options` given to
    /// `avcodec_open2`. The caller owns the context and frees it with `avcodec_free_context`.
    static func open(_ codec: UnsafePointer<AVCodec>?, name: String, item: String, options: [String: String],
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

    static func encode(_ ctx: UnsafeMutablePointer<AVCodecContext>, _ frame: UnsafeMutablePointer<AVFrame>?,
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
    static func avc(extradata bytes: [UInt8]) -> String? {
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

    /// AAC-LC.
    public static let aacLC = "mp4a.40.2"
}
