internal import CFFmpeg

/// Image file formats ``ImageEncoder`` writes.
public enum ImageFormat: String, Sendable, Equatable, CaseIterable, Codable {
    /// Lossless, through libavcodec's `png` encoder.
    case png
    /// Lossy, through libavcodec's `mjpeg` encoder (full-range YUV 4:2:0).
    case jpeg
    /// Lossy, through libavcodec's `libwebp` encoder.
    case webp
    /// Netpbm P6 (RGB) or P5 (gray), written directly.
    case ppm

    /// The usual file extension (`png`, `jpg`, `webp`, `ppm`).
    public var fileExtension: String { self == .jpeg ? "jpg" : rawValue }

    /// Accepts `png`, `jpg`/`jpeg`, `webp`, `ppm` in any case.
    public init?(name: String) {
        switch name.lowercased() {
        case "png": self = .png
        case "jpg", "jpeg": self = .jpeg
        case "webp": self = .webp
        case "ppm": self = .ppm
        default: return nil
        }
    }
}

/// Encodes an ``Image`` into PNG, JPEG or WebP through libavcodec, or PPM written directly.
///
/// Converts the image to what the encoder takes (RGB for PNG, full-range YUV 4:2:0 for JPEG, YUV 4:2:0 for WebP,
/// RGB or gray for PPM). The corresponding FFmpeg functions are `avcodec_send_frame` and `avcodec_receive_packet`
/// with the `png`, `mjpeg` and `libwebp` encoders. A value type; each call is independent and thread-safe.
public struct ImageEncoder: Sendable {
    /// The file format written.
    public let format: ImageFormat
    /// Quality 1 (smallest) – 100 (best) for JPEG and WebP; ignored by PNG and PPM.
    public let quality: Int

    /// An encoder for `format`; `quality` is clamped to 1…100.
    public init(format: ImageFormat, quality: Int = 90) {
        self.format = format
        self.quality = min(100, max(1, quality))
    }

    /// The encoded file's bytes.
    /// - Throws: ``MediaError`` `unsupportedCodec` when this FFmpeg build lacks the encoder, `other` when encoding fails.
    public func encode(_ image: Image) throws -> [UInt8] {
        switch format {
        case .ppm: return try ppm(image)
        case .png:
            let input: PixelFormat = switch image.pixelFormat {
            case .rgba, .bgra: .rgba
            case .gray: .gray
            default: .rgb24
            }
            return try encode(image, codec: "png", input: input.ffmpeg, fullRange: true, options: [:])
        case .jpeg:
            // FFmpeg's qscale 1 (best) … 31 (worst) for mjpeg.
            let q = 1 + Int((Double(100 - quality) * 30.0 / 99.0).rounded())
            return try encode(image, codec: "mjpeg", input: AV_PIX_FMT_YUVJ420P, fullRange: true, options: [:], qscale: q)
        case .webp:
            return try encode(image, codec: "libwebp", input: AV_PIX_FMT_YUV420P, fullRange: false,
                              options: ["quality": "\(quality)"])
        }
    }

    /// Encodes and writes atomically: a temporary file in the same folder, then a rename, so no half-written file
    /// is ever left at `path`.
    public func write(_ image: Image, to path: String) throws {
        let bytes = try encode(image)
        try AtomicFile.write(bytes, to: path)
    }

    private func ppm(_ image: Image) throws -> [UInt8] {
        let gray = image.pixelFormat == .gray
        let source = (gray || image.pixelFormat == .rgb24) ? image : try ImageConversion.convert(image, to: .rgb24)
        var out = Array("\(gray ? "P5" : "P6")\n\(image.width) \(image.height)\n255\n".utf8)
        out.append(contentsOf: source.bytes)
        return out
    }

    private func encode(_ image: Image, codec name: String, input: AVPixelFormat, fullRange: Bool,
                        options: [String: String], qscale: Int? = nil) throws -> [UInt8] {
        let operation = "encode \(format.rawValue)"
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw MediaError(.unsupportedCodec, operation: operation, item: "image",
                             message: "this FFmpeg has no '\(name)' encoder")
        }
        guard var ctx = avcodec_alloc_context3(codec) else {
            throw MediaError(.limitExceeded, operation: operation, item: "image", message: "out of memory")
        }
        var owned: UnsafeMutablePointer<AVCodecContext>? = ctx
        defer { avcodec_free_context(&owned) }
        ctx = owned!
        ctx.pointee.width = Int32(image.width)
        ctx.pointee.height = Int32(image.height)
        ctx.pointee.pix_fmt = input
        ctx.pointee.time_base = AVRational(num: 1, den: 25)
        ctx.pointee.color_range = fullRange ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG
        ctx.pointee.thread_count = 1
        if let qscale {
            ctx.pointee.flags |= vf_codec_flag_qscale()
            ctx.pointee.global_quality = Int32(qscale) * vf_lambda()
            ctx.pointee.qmin = 1
            ctx.pointee.qmax = 31
        }
        var dict: OpaquePointer? = nil
        for (k, v) in options { av_dict_set(&dict, k, v, 0) }
        defer { av_dict_free(&dict) }
        var result = avcodec_open2(ctx, codec, &dict)
        guard result >= 0 else { throw MediaError.ffmpeg(result, operation: operation, item: "image") }

        let frame = try ImageConversion.frame(from: image, format: input, fullRange: fullRange)
        defer { var f: UnsafeMutablePointer<AVFrame>? = frame; av_frame_free(&f) }
        if let qscale { frame.pointee.quality = Int32(qscale) * vf_lambda() }
        frame.pointee.pts = 0

        result = avcodec_send_frame(ctx, frame)
        guard result >= 0 else { throw MediaError.ffmpeg(result, operation: operation, item: "image") }
        _ = avcodec_send_frame(ctx, nil)
        guard var packet = av_packet_alloc() else {
            throw MediaError(.limitExceeded, operation: operation, item: "image", message: "out of memory")
        }
        var ownedPacket: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&ownedPacket) }
        packet = ownedPacket!
        var bytes: [UInt8] = []
        while true {
            result = avcodec_receive_packet(ctx, packet)
            if result == vf_averror_eof() || result == vf_averror_eagain() { break }
            guard result >= 0 else { throw MediaError.ffmpeg(result, operation: operation, item: "image") }
            bytes.append(contentsOf: UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
            av_packet_unref(packet)
        }
        guard !bytes.isEmpty else {
            throw MediaError(.other, operation: operation, item: "image", message: "the encoder produced no data")
        }
        return bytes
    }
}
