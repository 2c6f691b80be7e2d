internal import CFFmpeg

/// Moves ``Image`` pixels into FFmpeg frames of another format, for the encoders.
enum ImageConversion {
    /// A new frame (caller frees) holding `image` converted to `format`.
    static func frame(from image: Image, format: AVPixelFormat, fullRange: Bool) throws -> UnsafeMutablePointer<AVFrame> {
        guard let src = av_frame_alloc(), let dst = av_frame_alloc() else {
            throw MediaError(.limitExceeded, operation: "convert image", item: "image", message: "out of memory")
        }
        var srcOwned: UnsafeMutablePointer<AVFrame>? = src
        defer { av_frame_free(&srcOwned) }
        var dstOwned: UnsafeMutablePointer<AVFrame>? = dst
        do {
            try fill(src, with: image)
            dst.pointee.width = Int32(image.width)
            dst.pointee.height = Int32(image.height)
            dst.pointee.format = format.rawValue
            dst.pointee.color_range = fullRange ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG
            let r = av_frame_get_buffer(dst, 0)
            guard r >= 0 else { throw MediaError.ffmpeg(r, operation: "convert image", item: "image") }
            try scale(src, into: dst, dstFullRange: fullRange)
            return dst
        } catch {
            av_frame_free(&dstOwned)
            throw error
        }
    }

    /// `image` in another ``PixelFormat`` at the same size.
    static func convert(_ image: Image, to format: PixelFormat) throws -> Image {
        if image.pixelFormat == format { return image }
        let frame = try self.frame(from: image, format: format.ffmpeg, fullRange: format != .yuv420p)
        defer { var f: UnsafeMutablePointer<AVFrame>? = frame; av_frame_free(&f) }
        let bytes = Reorient.pack(frame, format: format, size: image.size, orientation: .identity)
        return Image(width: image.width, height: image.height, pixelFormat: format, bytes: bytes)
    }

    private static func fill(_ frame: UnsafeMutablePointer<AVFrame>, with image: Image) throws {
        frame.pointee.width = Int32(image.width)
        frame.pointee.height = Int32(image.height)
        frame.pointee.format = image.pixelFormat.ffmpeg.rawValue
        frame.pointee.color_range = image.pixelFormat == .yuv420p ? AVCOL_RANGE_MPEG : AVCOL_RANGE_JPEG
        let r = av_frame_get_buffer(frame, 0)
        guard r >= 0 else { throw MediaError.ffmpeg(r, operation: "convert image", item: "image") }
        image.bytes.withUnsafeBufferPointer { src in
            var offset = 0
            for (index, plane) in image.pixelFormat.planeSizes(width: image.width, height: image.height).enumerated() {
                let stride = Int(withUnsafeBytes(of: frame.pointee.linesize) { $0.load(fromByteOffset: index * 4, as: Int32.self) })
                let dst = withUnsafeBytes(of: frame.pointee.data) { $0.load(fromByteOffset: index * 8, as: UnsafeMutablePointer<UInt8>?.self) }!
                for y in 0..<plane.height {
                    (dst + y * stride).update(from: src.baseAddress! + offset + y * plane.bytesPerRow, count: plane.bytesPerRow)
                }
                offset += plane.bytesPerRow * plane.height
            }
        }
    }

    private static func scale(_ src: UnsafeMutablePointer<AVFrame>, into dst: UnsafeMutablePointer<AVFrame>,
                              dstFullRange: Bool) throws {
        let srcFormat = AVPixelFormat(rawValue: src.pointee.format)
        var dstFormat = AVPixelFormat(rawValue: dst.pointee.format)
        if dstFormat == AV_PIX_FMT_YUVJ420P { dstFormat = AV_PIX_FMT_YUV420P }
        guard let ctx = sws_getContext(src.pointee.width, src.pointee.height, srcFormat,
                                       dst.pointee.width, dst.pointee.height, dstFormat,
                                       SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nil, nil, nil) else {
            throw MediaError(.unsupportedFormat, operation: "convert image", item: "image", message: "libswscale refused the conversion")
        }
        defer { sws_freeContext(ctx) }
        let coefficients = sws_getCoefficients(SWS_CS_DEFAULT)
        _ = sws_setColorspaceDetails(ctx, coefficients, src.pointee.color_range == AVCOL_RANGE_JPEG ? 1 : 0,
                                     coefficients, dstFullRange ? 1 : 0, 0, 1 << 16, 1 << 16)
        let result = withUnsafeBytes(of: src.pointee.data) { srcData in
            withUnsafeBytes(of: src.pointee.linesize) { srcLines in
                withUnsafeBytes(of: dst.pointee.data) { dstData in
                    withUnsafeBytes(of: dst.pointee.linesize) { dstLines in
                        sws_scale(ctx,
                                  srcData.baseAddress!.assumingMemoryBound(to: UnsafePointer<UInt8>?.self),
                                  srcLines.baseAddress!.assumingMemoryBound(to: Int32.self), 0, src.pointee.height,
                                  dstData.baseAddress!.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self),
                                  dstLines.baseAddress!.assumingMemoryBound(to: Int32.self))
                    }
                }
            }
        }
        guard result > 0 else {
            throw MediaError(.other, operation: "convert image", item: "image", message: "libswscale failed")
        }
    }
}
