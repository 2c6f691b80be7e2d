import Media

/// What ``ThumbnailRenderer`` made of one item: the images, in the order of the asked positions (or one sheet).
public struct RenderedThumbnails: Sendable {
    /// The thumbnails, upright, SDR, `.rgb24`.
    public var images: [Image]
    /// Time in seconds of the frame behind each image (nil for a still picture or a sheet).
    public var times: [Double?]
    /// Duration of the item in seconds, when known.
    public var duration: Double?
    /// The upright displayed size of the source picture.
    public var sourceSize: Size
    /// Whether `auto` found only black or near-uniform frames and used the best of them anyway.
    public var blank: Bool
    /// The tone mapping applied (``ToneMapping/none`` for SDR sources).
    public var toneMapping: ToneMapping
}
