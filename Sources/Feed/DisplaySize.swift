/// The size in pixels at which a feed is shown, used to pick among the renditions a listing offers.
public struct DisplaySize: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Creates a display size; both sides must be positive.
    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "a display size needs positive sides")
        self.width = width
        self.height = height
    }

    /// A full-HD portrait phone screen, 1080 × 1920: the default for a vertical video feed.
    public static let portraitFullHD = DisplaySize(width: 1080, height: 1920)

    /// `1080x1920`.
    public var description: String { "\(width)x\(height)" }
}
