import Media

/// Draws a time such as `1:05.2` onto an `.rgb24` ``Image`` with a built-in 3×5 pixel font: white digits on a black
/// box in the bottom-left corner, for contact sheet tiles.
enum TimestampLabel {
    /// Rows of each glyph, 3 bits per row, most significant bit on the left.
    private static let glyphs: [Character: [UInt8]] = [
        "0": [7, 5, 5, 5, 7], "1": [2, 6, 2, 2, 7], "2": [7, 1, 7, 4, 7], "3": [7, 1, 7, 1, 7],
        "4": [5, 5, 7, 1, 1], "5": [7, 4, 7, 1, 7], "6": [7, 4, 7, 5, 7], "7": [7, 1, 1, 1, 1],
        "8": [7, 5, 7, 5, 7], "9": [7, 5, 7, 1, 7], ":": [0, 2, 0, 2, 0], ".": [0, 0, 0, 0, 2],
    ]

    /// `m:ss.s` for `seconds`.
    static func text(_ seconds: Double) -> String {
        let tenths = Int((max(0, seconds) * 10).rounded())
        let s = tenths / 10 % 60, m = tenths / 600
        return "\(m):\(s < 10 ? "0" : "")\(s).\(tenths % 10)"
    }

    /// `image` with `text` drawn at `scale` pixels per font pixel; glyphs that do not fit are left out.
    static func draw(_ text: String, on image: Image, scale: Int = 2) -> Image {
        guard image.pixelFormat == .rgb24 else { return image }
        var bytes = image.bytes
        let pad = scale
        let boxWidth = text.count * 4 * scale + pad, boxHeight = 5 * scale + 2 * pad
        guard boxWidth <= image.width, boxHeight <= image.height else { return image }
        let top = image.height - boxHeight
        func set(_ x: Int, _ y: Int, _ value: UInt8) {
            let o = (y * image.width + x) * 3
            bytes[o] = value; bytes[o + 1] = value; bytes[o + 2] = value
        }
        for y in top..<image.height { for x in 0..<boxWidth { set(x, y, 0) } }
        for (i, ch) in text.enumerated() {
            guard let rows = glyphs[ch] else { continue }
            for (row, bits) in rows.enumerated() {
                for col in 0..<3 where bits & (4 >> UInt8(col)) != 0 {
                    for dy in 0..<scale {
                        for dx in 0..<scale {
                            set(pad + (i * 4 + col) * scale + dx, top + pad + row * scale + dy, 255)
                        }
                    }
                }
            }
        }
        return Image(width: image.width, height: image.height, pixelFormat: .rgb24, bytes: bytes)
    }
}
