extension TestFixtures {
    /// `Fixtures/orientation/exif_<n>.jpg` (made by its generate.sh): the same 64x48 stored picture tagged with EXIF
    /// Orientation `n` (1–8).
    public static func orientation(_ n: Int) -> String {
        folder.appendingPathComponent("orientation/exif_\(n).jpg").path
    }

    /// Width and height of `orientation(n)` shown upright: 64x48, or 48x64 when the orientation swaps the axes
    /// (5–8).
    public static func exifUprightSize(_ n: Int) -> (width: Int, height: Int) { n >= 5 ? (48, 64) : (64, 48) }

    /// The colour at the corners of `orientation(n)` shown upright — top-left, top-right, bottom-left,
    /// bottom-right — by the EXIF 2.3 definition of each orientation, applied to the stored picture (red top-left,
    /// green top-right, blue bottom-left, grey bottom-right). Written from the standard, not from FFmpeg's matrices.
    public static func exifCorners(_ n: Int) -> [Corner] {
        switch n {
        case 1: [.red, .green, .blue, .grey]      // as stored
        case 2: [.green, .red, .grey, .blue]      // mirrored left-right
        case 3: [.grey, .blue, .green, .red]      // turned 180°
        case 4: [.blue, .grey, .red, .green]      // mirrored top-bottom
        case 5: [.red, .blue, .green, .grey]      // transposed (mirrored, then 270° clockwise)
        case 6: [.blue, .red, .grey, .green]      // 90° clockwise
        case 7: [.grey, .green, .blue, .red]      // transversed (mirrored, then 90° clockwise)
        case 8: [.green, .grey, .red, .blue]      // 270° clockwise
        default: preconditionFailure("EXIF orientation is 1-8")
        }
    }
}

/// The colour of a corner block of the orientation fixtures.
public enum Corner: String, Sendable, CustomStringConvertible {
    case red, green, blue, grey

    /// The block colour a pixel (r, g, b) shows, or nil when it is none of them.
    public init?(r: UInt8, g: UInt8, b: UInt8) {
        let (r, g, b) = (Int(r), Int(g), Int(b))
        if r > 180 && g < 80 && b < 80 { self = .red }
        else if g > 180 && r < 80 && b < 80 { self = .green }
        else if b > 180 && r < 80 && g < 80 { self = .blue }
        else if abs(r - 128) < 30 && abs(g - 128) < 30 && abs(b - 128) < 30 { self = .grey }
        else { return nil }
    }

    public var description: String { rawValue }
}

/// How much a picture combs: for each pixel of every other row, when the row stands out from both rows around it
/// (the other field) in the same direction, by how much (the smaller of the two differences), averaged over the
/// picture, on luma (BT.601 weights). A woven moving picture has whole rows standing out; a progressive one only at
/// horizontal edges. `Fixtures/transcode/interlaced.ts` measures 0.81–1.14 as decoded, 0.07–0.23 through
/// `Deinterlacer` (bwdif), and the progressive `testsrc2` it was made from 0.33.
public enum Combing {
    /// The comb strength of a packed `rgb24` picture of `width`×`height` pixels.
    public static func strength(rgb bytes: [UInt8], width: Int, height: Int) -> Double {
        func luma(_ x: Int, _ y: Int) -> Int {
            let o = (y * width + x) * 3
            return (Int(bytes[o]) * 299 + Int(bytes[o + 1]) * 587 + Int(bytes[o + 2]) * 114) / 1000
        }
        var total = 0, count = 0
        var y = 1
        while y + 1 < height {
            for x in 0..<width {
                let d1 = luma(x, y) - luma(x, y - 1), d2 = luma(x, y) - luma(x, y + 1)
                if d1 * d2 > 0 { total += min(abs(d1), abs(d2)) }
                count += 1
            }
            y += 2
        }
        return Double(total) / Double(max(count, 1))
    }
}
