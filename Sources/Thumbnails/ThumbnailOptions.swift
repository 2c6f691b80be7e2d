import Media

/// How each thumbnail is chosen and rendered.
public struct ThumbnailOptions: Sendable, Hashable, Codable {
    /// Where the thumbnails are taken; one output image each (ignored when ``sheet`` is set).
    public var positions: [FramePosition]
    /// The box the upright picture is fitted into; a height of 0 means "by aspect" (only the width limits).
    /// With ``square`` the width is the side of the square.
    public var box: Size
    /// Crop the center square instead of fitting the whole picture.
    public var square: Bool
    /// Output file format.
    public var format: ImageFormat
    /// JPEG and WebP quality, 1…100.
    public var quality: Int
    /// Render one contact sheet instead of one image per position.
    public var sheet: SheetLayout?
    /// Take the exact frame at or after each position (decoding everything from the keyframe before it) instead of
    /// the keyframe at or before it. Off by default: like ffmpegthumbnailer, a thumbnail takes the keyframe, which
    /// costs one decoded picture per position however far the position is from the keyframe.
    public var exact: Bool
    /// Draw each tile's time (`m:ss.s`) in its bottom-left corner on a contact sheet.
    public var timestamps: Bool

    /// The defaults: one thumbnail at 10 %, 320 wide, JPEG quality 85.
    public init(positions: [FramePosition] = [.fraction(0.1)], box: Size = Size(width: 320, height: 0),
                square: Bool = false, format: ImageFormat = .jpeg, quality: Int = 85, sheet: SheetLayout? = nil,
                exact: Bool = false, timestamps: Bool = false) {
        self.positions = positions.isEmpty ? [.fraction(0.1)] : positions
        self.box = box
        self.square = square
        self.format = format
        self.quality = quality
        self.sheet = sheet
        self.exact = exact
        self.timestamps = timestamps
    }

    /// A stable text naming every option that changes the output; a card made with other options is redone. `v` is
    /// the renderer's version: 3 turns photos upright by their EXIF Orientation and deinterlaces interlaced video, so
    /// cards made before are redone.
    public var fingerprint: String {
        let at = positions.map(\.description).joined(separator: ",")
        return "at=\(at);box=\(box);square=\(square);format=\(format.rawValue);q=\(quality);"
            + "sheet=\(sheet?.description ?? "-");exact=\(exact);ts=\(timestamps);v=3"
    }
}
