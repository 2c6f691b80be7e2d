internal import CHeif
import Foundation

/// An owned libheif context (`heif_context`) over a private copy of a file's bytes, which libheif reads in place
/// (`heif_context_read_from_memory_without_copy`): `deinit` frees the context, then the bytes. Used on one thread at
/// a time; never leaves the Media module.
final class HEIFContext {
    private let raw: OpaquePointer
    private let bytes: UnsafeMutableRawBufferPointer

    /// Parses the HEIF structure of `data` (no picture is decoded yet), refusing images wider or taller than
    /// `maxDimension` (`heif_context_set_maximum_image_size_limit`) and decoding grid tiles on at most
    /// `decodingThreads` threads of libheif's own (0: on the calling thread). The corresponding libheif functions are
    /// `heif_context_alloc` and `heif_context_read_from_memory_without_copy`.
    /// - Throws: ``HEIFError`` when the bytes are not a HEIF file libheif can read.
    init(reading data: Data, maxDimension: Int, decodingThreads: Int) throws(HEIFError) {
        guard let context = heif_context_alloc() else { throw HEIFError.outOfMemory }
        raw = context
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(data.count, 1), alignment: 16)
        _ = data.copyBytes(to: bytes.bindMemory(to: UInt8.self))
        heif_context_set_maximum_image_size_limit(raw, Int32(clamping: maxDimension))
        heif_context_set_max_decoding_threads(raw, Int32(clamping: decodingThreads))
        try HEIFError.check(heif_context_read_from_memory_without_copy(raw, bytes.baseAddress, data.count, nil))
    }

    deinit {
        heif_context_free(raw)
        bytes.deallocate()
    }

    /// The primary image's handle. The corresponding libheif function is `heif_context_get_primary_image_handle`.
    func primaryImage() throws(HEIFError) -> HEIFImageHandle {
        var handle: OpaquePointer? = nil
        try HEIFError.check(heif_context_get_primary_image_handle(raw, &handle))
        guard let handle else { throw HEIFError.outOfMemory }
        return HEIFImageHandle(takingOwnership: handle, of: self)
    }
}

/// An owned `heif_image_handle`: one image item of a ``HEIFContext``, which it keeps alive (libheif reads the
/// context's bytes when the image is decoded). `deinit` releases it (`heif_image_handle_release`).
final class HEIFImageHandle {
    private let raw: OpaquePointer
    private let owner: HEIFContext

    init(takingOwnership handle: OpaquePointer, of owner: HEIFContext) {
        raw = handle
        self.owner = owner
    }

    deinit { heif_image_handle_release(raw) }

    /// Width and height shown upright: after the image's transformations (`irot`, `clap`). The corresponding
    /// libheif functions are `heif_image_handle_get_width` and `heif_image_handle_get_height`.
    var size: (width: Int, height: Int) {
        (Int(heif_image_handle_get_width(raw)), Int(heif_image_handle_get_height(raw)))
    }

    /// The stored size (`ispe`), before transformations; (0, 0) when the file declares none.
    var storedSize: (width: Int, height: Int) {
        (Int(heif_image_handle_get_ispe_width(raw)), Int(heif_image_handle_get_ispe_height(raw)))
    }

    /// Bits per luma sample; -1 when unknown.
    var lumaBits: Int { Int(heif_image_handle_get_luma_bits_per_pixel(raw)) }

    /// Whether the image has an alpha plane.
    var hasAlpha: Bool { heif_image_handle_has_alpha_channel(raw) != 0 }

    /// Whether the colour is premultiplied by the alpha.
    var isPremultiplied: Bool { heif_image_handle_is_premultiplied_alpha(raw) != 0 }

    /// Decodes the image with its transformations applied, as 8-bit interleaved RGB (or RGBA with `alpha`); a
    /// deeper image is reduced to 8 bits by libheif (`convert_hdr_to_8bit`). Grid images are assembled from their
    /// tiles. The corresponding libheif function is `heif_decode_image`.
    func decodeRGB(alpha: Bool) throws(HEIFError) -> HEIFImage {
        guard let options = heif_decoding_options_alloc() else { throw HEIFError.outOfMemory }
        defer { heif_decoding_options_free(options) }
        options.pointee.ignore_transformations = 0
        options.pointee.convert_hdr_to_8bit = 1
        var image: OpaquePointer? = nil
        let chroma = alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB
        try HEIFError.check(heif_decode_image(raw, &image, heif_colorspace_RGB, chroma, options))
        guard let image else { throw HEIFError.outOfMemory }
        return HEIFImage(takingOwnership: image)
    }
}

/// An owned decoded picture (`heif_image`), freed in `deinit` (`heif_image_release`).
final class HEIFImage {
    private let raw: OpaquePointer

    init(takingOwnership image: OpaquePointer) { raw = image }

    deinit { heif_image_release(raw) }

    /// Calls `body` with the interleaved plane's rows: the bytes, the stride between rows, the width and height in
    /// pixels and the bytes per pixel (3 or 4). The pointer is valid only inside `body`; do not let it escape.
    /// Nil when the picture has no 8-bit interleaved plane. The corresponding libheif function is
    /// `heif_image_get_plane_readonly`.
    func withInterleavedPlane<Result>(
        _ body: (_ bytes: UnsafePointer<UInt8>, _ stride: Int, _ width: Int, _ height: Int, _ pixelBytes: Int) throws
            -> Result
    ) rethrows -> Result? {
        var stride: Int32 = 0
        let width = Int(heif_image_get_width(raw, heif_channel_interleaved))
        let height = Int(heif_image_get_height(raw, heif_channel_interleaved))
        let bits = Int(heif_image_get_bits_per_pixel(raw, heif_channel_interleaved))
        guard width > 0, height > 0, bits == 24 || bits == 32,
              let plane = heif_image_get_plane_readonly(raw, heif_channel_interleaved, &stride),
              Int(stride) >= width * bits / 8 else { return nil }
        return try body(plane, Int(stride), width, height, bits / 8)
    }
}

/// An error libheif reported (`struct heif_error`): its code, subcode and message.
struct HEIFError: Error, Equatable {
    /// `enum heif_error_code`, e.g. 2 for invalid input.
    var code: Int32
    /// `enum heif_suberror_code`.
    var subcode: Int32
    /// libheif's own message, with the subcode's text.
    var message: String

    static let outOfMemory = HEIFError(code: Int32(heif_error_Memory_allocation_error.rawValue), subcode: 0,
                                       message: "out of memory")

    /// Throws the error `result` carries unless it is `heif_error_Ok`.
    static func check(_ result: heif_error) throws(HEIFError) {
        guard result.code != heif_error_Ok else { return }
        throw HEIFError(code: Int32(result.code.rawValue), subcode: Int32(result.subcode.rawValue),
                        message: result.message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
                            ?? "libheif error \(result.code.rawValue)")
    }

    /// The ``MediaError/Kind`` this is: corrupt or cut-short data is `invalidData`, a file libheif knows but cannot
    /// decode (a codec without a decoder plugin, an unsupported feature) `unsupportedCodec`, a size over the
    /// security limits or memory `limitExceeded`.
    var kind: MediaError.Kind {
        switch UInt32(code) {
        case heif_error_Invalid_input.rawValue, heif_error_Decoder_plugin_error.rawValue: .invalidData
        case heif_error_Unsupported_filetype.rawValue: .unsupportedFormat
        case heif_error_Unsupported_feature.rawValue, heif_error_Plugin_loading_error.rawValue: .unsupportedCodec
        case heif_error_Memory_allocation_error.rawValue:
            .limitExceeded
        default:
            subcode == Int32(heif_suberror_Security_limit_exceeded.rawValue) ? .limitExceeded : .other
        }
    }
}
