internal import CHeif
import Foundation

/// HEIC and AVIF photos made at test time with libheif's encoders (x265 for HEVC, libaom for AV1, both in Debian's
/// libheif1), so no binary fixture is checked in: the same 64x48 four-corner picture as `Fixtures/orientation`
/// (red top-left, green top-right, blue bottom-left, grey bottom-right), stored as it is and given an orientation
/// through the HEIF transformation properties libheif writes for it (`irot`, `imir`), optionally with an EXIF
/// Orientation that says the same as an iPhone writes it, an alpha plane or 10-bit samples.
public struct PhotoFixture: Sendable {
    /// The codec of the primary image.
    public enum Codec: String, Sendable { case hevc, av1 }

    public var codec: Codec = .hevc
    /// The orientation (EXIF numbering, 1–8) the `irot`/`imir` properties give the stored picture.
    public var orientation: Int = 1
    /// An EXIF Orientation (1–8) to store in an `Exif` item too; nil for none.
    public var exifOrientation: Int? = nil
    /// Whether the picture has an alpha plane: opaque, but for a transparent bottom-right block.
    public var alpha: Bool = false
    /// Bits per sample: 8, or 10.
    public var bitDepth: Int = 8
    public var width: Int = 64
    public var height: Int = 48

    public init(codec: Codec = .hevc, orientation: Int = 1, exifOrientation: Int? = nil, alpha: Bool = false,
                bitDepth: Int = 8) {
        self.codec = codec
        self.orientation = orientation
        self.exifOrientation = exifOrientation
        self.alpha = alpha
        self.bitDepth = bitDepth
    }

    /// The file's name: what it is, with `.heic` or `.avif`.
    public var name: String {
        "photo_o\(orientation)" + (exifOrientation.map { "_exif\($0)" } ?? "") + (alpha ? "_alpha" : "")
            + "_\(bitDepth)bit" + (codec == .hevc ? ".heic" : ".avif")
    }

    /// The encoded file's bytes.
    public func encoded() throws -> Data {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vf-\(UUID().uuidString)-\(name)")
        defer { try? FileManager.default.removeItem(at: url) }
        try write(to: url.path)
        return try Data(contentsOf: url)
    }

    /// Writes the photo to `path`.
    public func write(to path: String) throws {
        guard let context = heif_context_alloc() else { throw PhotoFixtureError("heif_context_alloc") }
        defer { heif_context_free(context) }
        var encoder: OpaquePointer? = nil
        try check(heif_context_get_encoder_for_format(context, codec == .hevc ? heif_compression_HEVC
                                                      : heif_compression_AV1, &encoder), "no encoder")
        defer { heif_encoder_release(encoder) }
        try check(heif_encoder_set_lossy_quality(encoder, 90), "quality")
        // As phones and cameras store photos; libaom asserts on the 4:4:4 a deep RGB input would otherwise choose.
        try check(heif_encoder_set_parameter_string(encoder, "chroma", "420"), "chroma")

        var image: OpaquePointer? = nil
        if bitDepth > 8 {
            image = try deepImage()
        } else {
            image = try rgbImage()
        }
        defer { heif_image_release(image) }

        guard let options = heif_encoding_options_alloc() else { throw PhotoFixtureError("options") }
        defer { heif_encoding_options_free(options) }
        options.pointee.image_orientation = heif_orientation(rawValue: UInt32(orientation))
        var handle: OpaquePointer? = nil
        try check(heif_context_encode_image(context, image, encoder, options, &handle), "encode")
        defer { heif_image_handle_release(handle) }
        if let exifOrientation {
            let exif = PhotoFixture.exif(orientation: exifOrientation)
            try check(heif_context_add_exif_metadata(context, handle, exif, Int32(exif.count)), "exif")
        }
        try check(heif_context_write_to_file(context, path), "write")
    }

    /// The block colour (r, g, b from 0 to `top`) at (x, y), and whether it is transparent.
    private func block(x: Int, y: Int, top: Int) -> (rgb: [Int], clear: Bool) {
        let right = x >= width / 2, bottom = y >= height / 2
        let rgb: [Int] = switch (right, bottom) {
        case (false, false): [top, 0, 0]
        case (true, false): [0, top, 0]
        case (false, true): [0, 0, top]
        case (true, true): [top / 2 + 1, top / 2 + 1, top / 2 + 1]
        }
        return (rgb, right && bottom)
    }

    /// An 8-bit interleaved RGB(A) image; libheif converts it to YCbCr 4:2:0 for the encoder.
    private func rgbImage() throws -> OpaquePointer? {
        var image: OpaquePointer? = nil
        try check(heif_image_create(Int32(width), Int32(height), heif_colorspace_RGB,
                                    alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, &image), "image")
        try check(heif_image_add_plane(image, heif_channel_interleaved, Int32(width), Int32(height), 8), "plane")
        var stride: Int32 = 0
        guard let plane = heif_image_get_plane(image, heif_channel_interleaved, &stride) else {
            heif_image_release(image)
            throw PhotoFixtureError("no plane")
        }
        let channels = alpha ? 4 : 3
        for y in 0..<height {
            for x in 0..<width {
                let (rgb, clear) = block(x: x, y: y, top: 255)
                let values = alpha ? rgb + [clear ? 0 : 255] : rgb
                for c in 0..<channels { plane[y * Int(stride) + x * channels + c] = UInt8(values[c]) }
            }
        }
        return image
    }

    /// A deep (10-bit) YCbCr 4:2:0 image, BT.601 full range (libheif's default `nclx` when it writes one), as a
    /// camera stores it; libaom cannot take libheif's conversion of deep RGB input.
    private func deepImage() throws -> OpaquePointer? {
        var image: OpaquePointer? = nil
        try check(heif_image_create(Int32(width), Int32(height), heif_colorspace_YCbCr, heif_chroma_420, &image),
                  "image")
        let top = (1 << bitDepth) - 1
        let planes: [(heif_channel, Int)] = [(heif_channel_Y, 1), (heif_channel_Cb, 2), (heif_channel_Cr, 2)]
            + (alpha ? [(heif_channel_Alpha, 1)] : [])
        for (channel, step) in planes {
            let (w, h) = ((width + step - 1) / step, (height + step - 1) / step)
            try check(heif_image_add_plane(image, channel, Int32(w), Int32(h), Int32(bitDepth)), "plane")
            var stride: Int32 = 0
            guard let plane = heif_image_get_plane(image, channel, &stride) else {
                heif_image_release(image)
                throw PhotoFixtureError("no plane")
            }
            for y in 0..<h {
                for x in 0..<w {
                    let (rgb, clear) = block(x: x * step, y: y * step, top: top)
                    let (r, g, b) = (Double(rgb[0]), Double(rgb[1]), Double(rgb[2]))
                    let luma = 0.299 * r + 0.587 * g + 0.114 * b
                    let mid = Double(top + 1) / 2
                    let value: Double = switch channel {
                    case heif_channel_Y: luma
                    case heif_channel_Cb: mid + (b - luma) * 0.564
                    case heif_channel_Cr: mid + (r - luma) * 0.713
                    default: clear ? 0 : Double(top)
                    }
                    let sample = UInt16(min(max(value.rounded(), 0), Double(top)))
                    let at = plane + y * Int(stride) + x * 2
                    at[0] = UInt8(sample & 0xff)
                    at[1] = UInt8(sample >> 8)
                }
            }
        }
        return image
    }

    /// A TIFF header with one IFD holding the Orientation tag (0x0112), big-endian.
    static func exif(orientation: Int) -> [UInt8] {
        [0x4d, 0x4d, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x08,  // "MM", 42, IFD at 8
         0x00, 0x01,  // one entry
         0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, UInt8(orientation), 0x00, 0x00,  // SHORT, 1 value
         0x00, 0x00, 0x00, 0x00]  // no next IFD
    }

    private func check(_ error: heif_error, _ what: String) throws {
        guard error.code != heif_error_Ok else { return }
        throw PhotoFixtureError("\(what): \(error.message.map { String(cString: $0) } ?? "error \(error.code)")")
    }
}

/// Why a ``PhotoFixture`` could not be made.
public struct PhotoFixtureError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
