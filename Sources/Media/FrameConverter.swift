internal import CFFmpeg

/// Converts decoded frames to an ``Image``: pixel format, size, and upright orientation.
///
/// Scales with libswscale (bicubic) honouring the frame's colour matrix and range, fits the picture inside a box
/// keeping its displayed aspect ratio (even sizes for formats that need them), then applies an ``Orientation``: with
/// `upright: true` each frame's own ``VideoFrame/orientation`` (the stream's display matrix, else the frame's — a
/// photo's EXIF Orientation), so the result is upright as a player shows it; else a fixed one. The scaler context is reused while frames keep the
/// same geometry. The corresponding FFmpeg functions are `sws_getCachedContext`, `sws_setColorspaceDetails`,
/// `sws_scale_frame`. With `toneMapsHDR`, an HDR picture (PQ or HLG) is first tone-mapped to SDR BT.709 and resized by
/// libavfilter (``ToneMap``, the renditions' own mapping). Not thread-safe: one converter per thread.
public final class FrameConverter {
    /// Output pixel format.
    public let pixelFormat: PixelFormat
    /// The box the displayed picture is fitted into, or nil to keep the stored size.
    public let box: Size?
    /// The orientation applied after scaling when ``upright`` is false (``Orientation/identity`` keeps the stored
    /// orientation).
    public let orientation: Orientation
    /// Whether each frame is turned by its own ``VideoFrame/orientation`` instead of ``orientation``.
    public let upright: Bool
    /// How carefully libswscale rounds.
    public let scaling: ScalingQuality
    /// Whether HDR pictures are tone-mapped to SDR BT.709 (as renditions are) before the conversion.
    public let toneMapsHDR: Bool

    private var scaler: OpaquePointer? = nil
    private var scaled: UnsafeMutablePointer<AVFrame>? = nil
    /// The tone-mapping graph, kept while frames keep the shape and output size it was built for.
    private var toneGraph: (key: [Int32], graph: FilterGraph)? = nil

    /// - Parameters:
    ///   - pixelFormat: the output format.
    ///   - box: fit the displayed picture inside this box, or nil for no scaling.
    ///   - orientation: usually the stream's ``StreamInfo/orientation`` to get upright output, or `.identity`.
    ///   - scaling: ``ScalingQuality/accurate`` (the default) or ``ScalingQuality/fast`` for display.
    ///   - toneMapsHDR: tone-map HDR pictures to SDR BT.709 first, as renditions are.
    public init(pixelFormat: PixelFormat, fittingIn box: Size? = nil, orientation: Orientation = .identity,
                scaling: ScalingQuality = .accurate, toneMapsHDR: Bool = false) {
        self.pixelFormat = pixelFormat
        self.box = box
        self.orientation = orientation
        self.upright = false
        self.scaling = scaling
        self.toneMapsHDR = toneMapsHDR
    }

    /// A converter that turns every frame upright as a player shows it, by the frame's ``VideoFrame/orientation``:
    /// the stream's display matrix where the stream has one, else the frame's own (a JPEG's EXIF Orientation).
    /// - Parameters:
    ///   - pixelFormat: the output format.
    ///   - box: fit the displayed picture inside this box, or nil for no scaling.
    ///   - upright: true to follow each frame's orientation; false keeps the stored orientation.
    ///   - scaling: ``ScalingQuality/accurate`` (the default) or ``ScalingQuality/fast`` for display.
    ///   - toneMapsHDR: tone-map HDR pictures to SDR BT.709 first, as renditions are.
    public init(pixelFormat: PixelFormat, fittingIn box: Size? = nil, upright: Bool,
                scaling: ScalingQuality = .accurate, toneMapsHDR: Bool = false) {
        self.pixelFormat = pixelFormat
        self.box = box
        self.orientation = .identity
        self.upright = upright
        self.scaling = scaling
        self.toneMapsHDR = toneMapsHDR
    }

    deinit {
        sws_freeContext(scaler)
        av_frame_free(&scaled)
    }

    /// The size of the output for a stored picture of `stored` size and sample aspect ratio `sar`: displayed size
    /// (after ``orientation``) fitted into ``box``.
    public func outputSize(stored: Size, sampleAspectRatio sar: Rational = Rational(1, 1)) -> Size {
        outputSize(stored: stored, sampleAspectRatio: sar, orientation: orientation)
    }

    /// The size ``convert(_:)`` gives `frame`: its displayed size (after the orientation applied to it) fitted into
    /// ``box``.
    public func outputSize(for frame: VideoFrame) -> Size {
        outputSize(stored: frame.size, sampleAspectRatio: frame.sampleAspectRatio, orientation: orientation(of: frame))
    }

    /// The orientation ``convert(_:)`` applies to `frame`.
    public func orientation(of frame: VideoFrame) -> Orientation { upright ? frame.orientation : orientation }

    private func outputSize(stored: Size, sampleAspectRatio sar: Rational, orientation: Orientation) -> Size {
        var displayW = Double(stored.width)
        let displayH = Double(stored.height)
        if let r = sar.value, r > 0, abs(r - 1) > 1e-6, box != nil { displayW *= r }
        var w: Double, h: Double
        if orientation.swapsAxes { (w, h) = (displayH, displayW) } else { (w, h) = (displayW, displayH) }
        if let box {
            let scale = min(Double(box.width) / w, Double(box.height) / h)
            w = (w * scale).rounded()
            h = (h * scale).rounded()
        }
        var out = Size(width: max(1, Int(w)), height: max(1, Int(h)))
        if pixelFormat.needsEvenSize {
            out.width = max(2, out.width - out.width % 2)
            out.height = max(2, out.height - out.height % 2)
        }
        return out
    }

    /// Converts one frame.
    /// - Throws: ``MediaError`` `invalidArgument` for a box of zero size (or a tone-mapping graph libavfilter
    ///   refuses), `unsupportedFormat` if libswscale cannot convert the frame's format, `limitExceeded` when out of
    ///   memory.
    public func convert(_ frame: VideoFrame) throws -> Image {
        if let box, box.width <= 0 || box.height <= 0 {
            throw MediaError(.invalidArgument, operation: "convert", item: "frame", message: "box \(box)")
        }
        let orientation = orientation(of: frame)
        let out = outputSize(stored: frame.size, sampleAspectRatio: frame.sampleAspectRatio, orientation: orientation)
        // Scale to the pre-rotation size, then reorient.
        let scaledSize = orientation.swapsAxes ? Size(width: out.height, height: out.width) : out
        // An HDR picture is tone-mapped and resized by libavfilter; libswscale then only converts it.
        let mapped = try toneMapsHDR ? toneMapped(frame.frame, to: scaledSize) : nil
        // `mapped` owns the picture libswscale reads: it lives until the conversion returns.
        let scaledFrame = try withExtendedLifetime(mapped) { try scale(mapped?.raw ?? frame.frame, to: scaledSize) }
        let bytes = Reorient.pack(scaledFrame, format: pixelFormat, size: scaledSize, orientation: orientation)
        return Image(width: out.width, height: out.height, pixelFormat: pixelFormat, bytes: bytes)
    }

    /// `src` tone-mapped to SDR BT.709 4:2:0 at `size` (rounded up to even sizes, which 4:2:0 needs; the conversion
    /// that follows scales to `size`), or nil when it is not HDR. 4:2:0, as the renditions are: the same picture
    /// with full-resolution chroma turns into other RGB where colours clip (an HLG clip's dark scene: 2.3 % more mean
    /// luma).
    private func toneMapped(_ src: UnsafeMutablePointer<AVFrame>, to size: Size) throws -> Frame? {
        guard let map = ToneMap.of(src) else { return nil }
        let even = Size(width: size.width + size.width % 2, height: size.height + size.height % 2)
        let tags = [src.pointee.color_trc.rawValue, src.pointee.color_primaries.rawValue,
                    src.pointee.colorspace.rawValue, src.pointee.color_range.rawValue]
        let key = FilterGraph.shape(src) + [Int32(even.width), Int32(even.height)]
            + tags.map { Int32(truncatingIfNeeded: $0) }
        let graph: FilterGraph
        if let kept = toneGraph, kept.key == key {
            graph = kept.graph
        } else {
            toneGraph = nil
            graph = try FilterGraph("[in]" + map.filters(width: even.width, height: even.height) + "[out0]",
                                    input: src, timeBase: AVRational(num: 1, den: 1),
                                    frameRate: AVRational(num: 0, den: 1), outputs: 1, threads: 1, item: "frame")
            toneGraph = (key, graph)
        }
        try graph.push(src)
        // One picture in, one out: these filters hold none back.
        guard case .output(let frame) = try graph.pull(0) else {
            toneGraph = nil
            throw MediaError(.invalidData, operation: "convert", item: "frame", message: "tone mapping gave no picture")
        }
        // What the chain made, said on the frame: the conversion reads it as BT.709 limited range, whatever tags
        // libavfilter passed on.
        frame.raw.pointee.colorspace = AVCOL_SPC_BT709
        frame.raw.pointee.color_range = AVCOL_RANGE_MPEG
        frame.raw.pointee.color_primaries = AVCOL_PRI_BT709
        frame.raw.pointee.color_trc = AVCOL_TRC_BT709
        return frame
    }

    private func scale(_ src: UnsafeMutablePointer<AVFrame>, to size: Size) throws -> UnsafeMutablePointer<AVFrame> {
        var srcFormat = AVPixelFormat(rawValue: src.pointee.format)
        var fullRange = src.pointee.color_range == AVCOL_RANGE_JPEG
        // The deprecated yuvj formats are full-range yuv; name them so to keep libswscale quiet.
        switch srcFormat {
        case AV_PIX_FMT_YUVJ420P: srcFormat = AV_PIX_FMT_YUV420P; fullRange = true
        case AV_PIX_FMT_YUVJ422P: srcFormat = AV_PIX_FMT_YUV422P; fullRange = true
        case AV_PIX_FMT_YUVJ444P: srcFormat = AV_PIX_FMT_YUV444P; fullRange = true
        case AV_PIX_FMT_YUVJ440P: srcFormat = AV_PIX_FMT_YUV440P; fullRange = true
        default: break
        }
        let dstFormat = pixelFormat.ffmpeg
        scaler = sws_getCachedContext(scaler, src.pointee.width, src.pointee.height, srcFormat,
                                      Int32(size.width), Int32(size.height), dstFormat,
                                      scaling.flags(from: Size(width: Int(src.pointee.width),
                                                               height: Int(src.pointee.height)), to: size),
                                      nil, nil, nil)
        guard let scaler else {
            throw MediaError(.unsupportedFormat, operation: "convert", item: "frame",
                             message: "libswscale cannot convert \(av_get_pix_fmt_name(srcFormat).map { String(cString: $0) } ?? "?") to \(pixelFormat.rawValue)")
        }
        let srcDesc = av_pix_fmt_desc_get(srcFormat)
        let srcIsRGB = srcDesc.map { ($0.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB)) != 0 } ?? false
        if !srcIsRGB {
            // To RGB an untagged picture is read as players read it (``UntaggedColour``); a yuv420p picture keeps
            // the matrix it has (taking the frame's own, libswscale converts nothing).
            let matrix = pixelFormat == .yuv420p ? src.pointee.colorspace : UntaggedColour.matrix(of: src)
            let coefficients = sws_getCoefficients(Int32(matrix.rawValue))
            let dstCoefficients = sws_getCoefficients(SWS_CS_DEFAULT)
            _ = sws_setColorspaceDetails(scaler, coefficients, fullRange ? 1 : 0,
                                         dstCoefficients, pixelFormat == .yuv420p ? 0 : 1, 0, 1 << 16, 1 << 16)
        }
        let target = try destination(size)
        // The output frame has its own buffers (``destination(_:)``), so libswscale writes into them: no copy, and
        // the source frame is only referenced (decoded frames are reference-counted).
        let result = sws_scale_frame(scaler, target, src)
        guard result >= 0 else {
            throw MediaError.ffmpeg(result, operation: "convert", item: "frame")
        }
        return target
    }

    /// The reusable output frame, reallocated when the size or format changes.
    private func destination(_ size: Size) throws -> UnsafeMutablePointer<AVFrame> {
        if let f = scaled, f.pointee.width == Int32(size.width), f.pointee.height == Int32(size.height),
           f.pointee.format == pixelFormat.ffmpeg.rawValue {
            return f
        }
        av_frame_free(&scaled)
        guard let f = av_frame_alloc() else {
            throw MediaError(.limitExceeded, operation: "convert", item: "frame", message: "out of memory")
        }
        f.pointee.width = Int32(size.width)
        f.pointee.height = Int32(size.height)
        f.pointee.format = pixelFormat.ffmpeg.rawValue
        scaled = f
        let result = av_frame_get_buffer(f, 0)
        guard result >= 0 else { throw MediaError.ffmpeg(result, operation: "convert", item: "frame") }
        return f
    }
}

/// How carefully ``FrameConverter`` rounds while it scales and converts.
public enum ScalingQuality: String, Sendable, Equatable, Codable {
    /// Bicubic with libswscale's accurate rounding (`SWS_ACCURATE_RND`): for images that are kept and compared
    /// (thumbnails, dumps).
    case accurate
    /// Bicubic on libswscale's fastest SIMD paths: a level of rounding difference at most, invisible on a screen,
    /// for less time per frame (docs/benchmarks.md). For frames a player shows and drops.
    case fast
    /// For thumbnails: when the picture shrinks to half its size or less in both directions, area averaging
    /// (`SWS_AREA`: each output pixel is the mean of the source pixels it covers — the filter made for large
    /// reductions, free of aliasing) with accurate rounding, several times cheaper than a bicubic kernel stretched
    /// over as many source pixels; otherwise as ``accurate``.
    case thumbnail

    /// libswscale's flags for scaling `source` to `target`.
    func flags(from source: Size, to target: Size) -> Int32 {
        switch self {
        case .accurate: return SWS_BICUBIC | SWS_ACCURATE_RND
        case .fast: return SWS_BICUBIC
        case .thumbnail:
            let shrinks = target.width * 2 <= source.width && target.height * 2 <= source.height
            return (shrinks ? SWS_AREA : SWS_BICUBIC) | SWS_ACCURATE_RND
        }
    }
}
