/// What a HEIC or AVIF photo is, for a ``MediaInfo`` whose item was decoded by libheif rather than demuxed by
/// FFmpeg (``MediaInfo/photo``).
///
/// Such an item reaches the rest of Media as a one-picture still: the primary image, decoded by libheif with its
/// transformations (`irot`, `imir`, `clap`) applied, so it is upright, handed to FFmpeg as an uncompressed PAM
/// picture (``MediaInfo/container`` `pam_pipe`, codec `pam`, `rgb24` or `rgba`). Its EXIF Orientation, if any, is not
/// applied again: in a HEIF file the transformation properties decide how the picture is shown, and the EXIF tag
/// only repeats them (an iPhone writes `irot` and EXIF Orientation 6 for the same quarter turn).
public struct PhotoInfo: Sendable, Equatable, Codable {
    /// `"heif"` (HEIC and other HEIF) or `"avif"`, from the file's brands.
    public var format: String
    /// The `ftyp` major brand, e.g. `"heic"`, `"mif1"`, `"avif"`.
    public var majorBrand: String
    /// The `ftyp` compatible brands, in file order.
    public var compatibleBrands: [String]
    /// The primary image's codec as the brands promise it (`"hevc"`, `"av1"`); nil when they leave it open.
    public var codec: String?
    /// Width and height of the primary image shown upright (after its transformations), in pixels.
    public var width: Int
    /// See ``width``.
    public var height: Int
    /// Bits per luma sample as stored (8, 10, 12); the picture handed on is 8-bit.
    public var bitDepth: Int
    /// Whether the primary image has an alpha plane (an auxiliary alpha image), handed on as `rgba`.
    public var hasAlpha: Bool
}
