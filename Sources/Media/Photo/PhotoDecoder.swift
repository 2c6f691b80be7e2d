import Foundation

/// Decodes a HEIC or AVIF photo's primary image with libheif into an uncompressed PAM picture, which ``MediaFile``
/// then opens like any other still image: everything after the open (``VideoDecoder``, thumbnails, a still
/// rendition, the player) sees a one-picture `pam_pipe` file and runs unchanged.
///
/// Why a PAM: it is the cheapest picture FFmpeg demuxes and decodes (a text header, then the rows as they are: the
/// decode is one copy), it carries 8-bit RGB and RGBA exactly, and it has no orientation of its own, so nothing is
/// turned twice. libheif turns the picture upright (`irot`, `imir`, `clap`); the EXIF Orientation a HEIF may also
/// carry is not applied again (see ``PhotoInfo``).
enum PhotoDecoder {
    /// The largest photo file read into memory for libheif, in bytes. A 12 MP iPhone HEIC is 1–4 MB, a 100 MP AVIF
    /// some tens of MB.
    static let maxFileBytes = 256 << 20
    /// libheif's own threads for a grid's tiles (0 would decode them on the calling thread). Two halve a lone 12 MP
    /// iPhone photo's decode (pug.heic: about 0.7 s to 0.35 s on two cores), which a poster made on demand waits
    /// for; more would only crowd a batch that already runs one item per core.
    static let decodingThreads = 2

    /// What ``decode(_:brand:item:options:interrupt:)`` hands back: the picture as a PAM file and what the photo is.
    struct Decoded {
        var pam: Data
        var info: PhotoInfo
    }

    /// Decodes `data` (a whole HEIF file whose brands are `brand`) into a PAM picture. Declared sizes over
    /// ``OpenOptions/maxDimension`` per side or ``OpenOptions/maxPixelCount`` are refused before anything is decoded,
    /// stored (`ispe`) and shown alike; the caller's cancellation and time limit are checked before and after the
    /// decode, which libheif cannot interrupt.
    /// - Throws: ``MediaError`` — `invalidData` (corrupt, cut short, not a HEIF image), `unsupportedCodec`,
    ///   `limitExceeded`, `cancelled`, `timedOut`; each names `item`.
    static func decode(_ data: Data, brand: PhotoBrand, item: String, options: OpenOptions,
                       interrupt: InterruptState) throws -> Decoded {
        func failure(_ error: HEIFError, _ operation: String) -> MediaError {
            MediaError(error.kind, operation: operation, item: item, message: "libheif: \(error.message)")
        }
        try check(interrupt, "open", item: item, options: options)
        let handle: HEIFImageHandle
        do {
            let context = try HEIFContext(reading: data, maxDimension: options.maxDimension,
                                          decodingThreads: decodingThreads)
            handle = try context.primaryImage()
        } catch {
            throw failure(error, "open")
        }
        let shown = handle.size
        let stored = handle.storedSize
        for (what, size) in [("shown", shown), ("stored", stored)] {
            if size.width > options.maxDimension || size.height > options.maxDimension {
                throw MediaError(.limitExceeded, operation: "open", item: item, message: """
                    the photo's \(what) size is \(size.width)x\(size.height), over the limit of \
                    \(options.maxDimension) per side
                    """)
            }
            if size.width * size.height > options.maxPixelCount {
                throw MediaError(.limitExceeded, operation: "open", item: item, message: """
                    the photo has \(size.width * size.height) pixels (\(what)), over the limit of \
                    \(options.maxPixelCount)
                    """)
            }
        }
        guard shown.width > 0, shown.height > 0 else {
            throw MediaError(.invalidData, operation: "open", item: item,
                             message: "the primary image declares no size (\(shown.width)x\(shown.height))")
        }
        let alpha = handle.hasAlpha
        let image: HEIFImage
        do {
            image = try handle.decodeRGB(alpha: alpha)
        } catch {
            throw failure(error, "decode photo")
        }
        try check(interrupt, "decode photo", item: item, options: options)
        let premultiplied = alpha && handle.isPremultiplied
        let made = image.withInterleavedPlane { bytes, stride, width, height, pixelBytes in
            (pam(bytes, stride: stride, width: width, height: height, pixelBytes: pixelBytes,
                 premultiplied: premultiplied), width, height)
        }
        guard let (pam, width, height) = made else {
            throw MediaError(.invalidData, operation: "decode photo", item: item,
                             message: "libheif returned no 8-bit RGB picture")
        }
        let info = PhotoInfo(format: brand.format, majorBrand: brand.major, compatibleBrands: brand.compatible,
                             codec: brand.codec, width: width, height: height, bitDepth: max(handle.lumaBits, 8),
                             hasAlpha: alpha)
        return Decoded(pam: pam, info: info)
    }

    private static func check(_ interrupt: InterruptState, _ operation: String, item: String,
                              options: OpenOptions) throws {
        if interrupt.isCancelled {
            throw MediaError(.cancelled, operation: operation, item: item, message: "cancelled by the caller")
        }
        if interrupt.itemExpired {
            throw MediaError(.timedOut, operation: operation, item: item,
                             message: "the item's time limit of \(options.itemTimeLimit ?? 0) s passed")
        }
    }

    /// A PAM file (Netpbm P7, `TUPLTYPE RGB` or `RGB_ALPHA`, `MAXVAL 255`) of the rows at `bytes`. A premultiplied
    /// picture is divided back to straight alpha, which is what PAM and FFmpeg's `rgba` mean.
    static func pam(_ bytes: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int, pixelBytes: Int,
                    premultiplied: Bool) -> Data {
        let header = Array("""
            P7
            WIDTH \(width)
            HEIGHT \(height)
            DEPTH \(pixelBytes)
            MAXVAL 255
            TUPLTYPE \(pixelBytes == 4 ? "RGB_ALPHA" : "RGB")
            ENDHDR

            """.utf8)
        let row = width * pixelBytes
        var data = Data(count: header.count + row * height)
        data.withUnsafeMutableBytes { out in
            let base = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            base.update(from: header, count: header.count)
            for y in 0..<height {
                let target = base + header.count + y * row
                target.update(from: bytes + y * stride, count: row)
                if premultiplied { unpremultiply(target, pixels: width) }
            }
        }
        return data
    }

    private static func unpremultiply(_ row: UnsafeMutablePointer<UInt8>, pixels: Int) {
        for x in 0..<pixels {
            let p = row + x * 4
            let a = Int(p[3])
            guard a > 0, a < 255 else { continue }
            for c in 0..<3 { p[c] = UInt8(min(255, (Int(p[c]) * 255 + a / 2) / a)) }
        }
    }
}
