/// What an item's first bytes say about it being a HEIF photo: the `ftyp` box of ISO/IEC 23008-12 (HEIF) and its
/// AVIF profile. FFmpeg 5.1 cannot open HEIF (its MP4 demuxer finds no `moov`) and misreads AVIF stills, so a file
/// whose brands name a HEIF *image* goes to libheif instead (``PhotoDecoder``).
///
/// The rule: a major or compatible brand that declares image items — `mif1`, `mif2`, `heic`, `heix`, `heim`, `heis`,
/// `avif`, `avio` — makes the file a photo, decoded from its primary item; an animated AVIF or a HEIF burst carries
/// such a brand too, and libheif shows its primary still. Brands of image *sequences* only (`msf1`, `hevc`, `hevx`,
/// `avis` without any image brand) are tracks in an MP4 structure that FFmpeg's MOV demuxer reads as video, so those
/// files stay with FFmpeg, as does every other `ftyp` (MP4, MOV, 3GP).
struct PhotoBrand: Equatable {
    /// The major brand, e.g. `heic`, `avif`, `mif1`.
    var major: String
    /// The compatible brands, in file order.
    var compatible: [String]

    /// Brands that declare image items (a primary image libheif can decode).
    static let imageBrands: Set<String> = ["mif1", "mif2", "heic", "heix", "heim", "heis", "avif", "avio"]
    /// Brands of image sequences (tracks), left to FFmpeg unless an image brand is present too.
    static let sequenceBrands: Set<String> = ["msf1", "hevc", "hevx", "hevm", "hevs", "avis"]
    /// How many bytes ``init(prefix:)`` wants to see: the box header and up to 58 compatible brands.
    static let prefixLength = 256

    /// Reads the `ftyp` box at the start of `prefix`; nil when there is none or it is cut short of its brands.
    init?(prefix: [UInt8]) {
        guard prefix.count >= 16, prefix[4...7].elementsEqual("ftyp".utf8) else { return nil }
        let declared = Int(prefix[0]) << 24 | Int(prefix[1]) << 16 | Int(prefix[2]) << 8 | Int(prefix[3])
        guard declared >= 16 else { return nil }
        let end = min(declared, prefix.count)
        func brand(at offset: Int) -> String {
            String(decoding: prefix[offset..<offset + 4], as: UTF8.self)
        }
        major = brand(at: 8)
        compatible = stride(from: 16, to: end - 3, by: 4).map(brand(at:))
    }

    /// Whether the file holds a HEIF image item (see the rule above).
    var isPhoto: Bool {
        PhotoBrand.imageBrands.contains(major) || compatible.contains(where: PhotoBrand.imageBrands.contains)
    }

    /// `"avif"` when the file says it is AVIF (an AV1 image), else `"heif"`.
    var format: String {
        major == "avif" || major == "avis" || compatible.contains("avif") || compatible.contains("avis")
            ? "avif" : "heif"
    }
}

extension PhotoBrand {
    /// The codec the brands promise for the primary image: `"av1"` for AVIF, `"hevc"` for HEIC (`heic`, `heix`,
    /// `heim`, `heis`); nil when the brands leave it open (`mif1` alone).
    var codec: String? {
        let all = [major] + compatible
        if format == "avif" { return "av1" }
        return all.contains(where: ["heic", "heix", "heim", "heis"].contains) ? "hevc" : nil
    }
}
