internal import CFFmpeg

/// Pixel formats the Media layer converts to and encodes from.
public enum PixelFormat: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// 8-bit R, G, B, packed.
    case rgb24
    /// 8-bit R, G, B, A, packed.
    case rgba
    /// 8-bit B, G, R, A, packed: what most GPU and window-system surfaces take.
    case bgra
    /// 8-bit luma only.
    case gray
    /// 8-bit planar Y, U, V with chroma halved both ways; needs even width and height.
    case yuv420p

    /// Bytes per pixel of packed formats; 1 for the luma plane of planar ones.
    public var bytesPerPixel: Int {
        switch self {
        case .rgb24: 3
        case .rgba, .bgra: 4
        case .gray, .yuv420p: 1
        }
    }

    /// Whether the format needs even width and height.
    public var needsEvenSize: Bool { self == .yuv420p }

    var ffmpeg: AVPixelFormat {
        switch self {
        case .rgb24: AV_PIX_FMT_RGB24
        case .rgba: AV_PIX_FMT_RGBA
        case .bgra: AV_PIX_FMT_BGRA
        case .gray: AV_PIX_FMT_GRAY8
        case .yuv420p: AV_PIX_FMT_YUV420P
        }
    }

    /// Byte counts of the planes of a `width`×`height` image, in order, tightly packed.
    public func planeSizes(width: Int, height: Int) -> [(width: Int, height: Int, bytesPerRow: Int)] {
        switch self {
        case .yuv420p:
            let cw = (width + 1) / 2, ch = (height + 1) / 2
            return [(width, height, width), (cw, ch, cw), (cw, ch, cw)]
        default:
            return [(width, height, width * bytesPerPixel)]
        }
    }

    /// Total bytes of a tightly packed `width`×`height` image.
    public func byteCount(width: Int, height: Int) -> Int {
        planeSizes(width: width, height: height).reduce(0) { $0 + $1.bytesPerRow * $1.height }
    }
}

/// A converted picture in memory: tightly packed rows, planes one after another, no padding.
/// A value type, `Sendable`: safe to hand to any thread or keep in a cache.
public struct Image: Sendable, Equatable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Layout of ``bytes``.
    public let pixelFormat: PixelFormat
    /// The pixels; `pixelFormat.byteCount(width:height:)` bytes.
    public let bytes: [UInt8]

    /// Wraps packed pixel bytes. The byte count must match the size and format.
    public init(width: Int, height: Int, pixelFormat: PixelFormat, bytes: [UInt8]) {
        precondition(width > 0 && height > 0, "empty image")
        precondition(bytes.count == pixelFormat.byteCount(width: width, height: height), "byte count does not match")
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.bytes = bytes
    }

    /// Width and height.
    public var size: Size { Size(width: width, height: height) }

    /// The components of the pixel at (x, y) of the first plane: R,G,B(,A) / B,G,R,A / Y.
    public func pixel(x: Int, y: Int) -> ArraySlice<UInt8> {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel out of range")
        let bpp = pixelFormat.bytesPerPixel
        let start = y * width * bpp + x * bpp
        return bytes[start..<(start + bpp)]
    }

    /// MD5 of ``bytes`` in lowercase hex, as FFmpeg's `framemd5` hashes a rawvideo frame of this format.
    public var md5: String { MD5.hex(bytes) }
}
