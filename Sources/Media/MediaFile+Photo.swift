internal import CFFmpeg
import Foundation

extension MediaFile {
    /// The HEIF photo path of opening: when the input's `ftyp` brands name a HEIF image (``PhotoBrand``), reads the
    /// whole input, decodes its primary image with libheif (``PhotoDecoder``) and returns the picture as a PAM file
    /// to open instead, with what the photo is; nil (the input rewound to its start) for anything else.
    ///
    /// Runs before FFmpeg probes the input, for every source alike (a path, a URL, bytes in memory), so that every
    /// product path — probe, thumbnails, still renditions, serve, play — gets photos from the one place that opens
    /// items.
    /// - Throws: ``MediaError`` — `limitExceeded` for a file over ``PhotoDecoder/maxFileBytes``, read errors as
    ///   reading does, and what ``PhotoDecoder/decode(_:brand:item:options:interrupt:)`` throws.
    static func decodePhotoIfHEIF(_ io: UnsafeMutablePointer<AVIOContext>, item: String, options: OpenOptions,
                                  interrupt: InterruptState) throws -> PhotoDecoder.Decoded? {
        var prefix = [UInt8](repeating: 0, count: PhotoBrand.prefixLength)
        let count = avio_read(io, &prefix, Int32(prefix.count))
        // A short read stays in the I/O buffer, so going back to 0 works on an unseekable input too.
        let rewound = avio_seek(io, 0, SEEK_SET)
        guard count > 0, let brand = PhotoBrand(prefix: Array(prefix.prefix(Int(count)))), brand.isPhoto else {
            if rewound < 0 {
                throw MediaError.ffmpeg(Int32(truncatingIfNeeded: rewound), operation: "open", item: item,
                                        interrupt: interrupt)
            }
            return nil
        }
        if rewound < 0 {
            throw MediaError.ffmpeg(Int32(truncatingIfNeeded: rewound), operation: "open", item: item,
                                    interrupt: interrupt)
        }
        if let allowed = options.allowedFormats, !allowed.contains("heif") {
            throw MediaError(.policyViolation, operation: "open", item: item, message: """
                the item is a \(brand.format.uppercased()) photo and 'heif' is not among the allowed formats
                """)
        }
        let data = try readWhole(io, limit: PhotoDecoder.maxFileBytes, item: item, interrupt: interrupt)
        return try PhotoDecoder.decode(data, brand: brand, item: item, options: options, interrupt: interrupt)
    }

    /// Reads `io` to its end, refusing more than `limit` bytes. The corresponding FFmpeg function is `avio_read`.
    private static func readWhole(_ io: UnsafeMutablePointer<AVIOContext>, limit: Int, item: String,
                                  interrupt: InterruptState) throws -> Data {
        let declared = avio_size(io)
        if declared > limit {
            throw MediaError(.limitExceeded, operation: "open", item: item,
                             message: "the photo is \(declared) bytes, over the limit of \(limit)")
        }
        var data = Data()
        data.reserveCapacity(declared > 0 ? Int(declared) : 1 << 20)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let got = avio_read(io, &chunk, Int32(chunk.count))
            if got == vf_averror_eof() || got == 0 { break }
            if got < 0 {
                throw MediaError.ffmpeg(got, operation: "read", item: item, interrupt: interrupt)
            }
            data.append(contentsOf: chunk[..<Int(got)])
            if data.count > limit {
                throw MediaError(.limitExceeded, operation: "open", item: item,
                                 message: "the photo is over the limit of \(limit) bytes")
            }
        }
        return data
    }
}
