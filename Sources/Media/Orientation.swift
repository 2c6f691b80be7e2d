/// How a player turns a stored picture upright: an optional horizontal mirror, then a clockwise rotation by a
/// multiple of 90°. Together these express all eight orientations a display matrix can give.
///
/// Read from the stream's display matrix (`AV_PKT_DATA_DISPLAYMATRIX`) the way `ffmpeg`'s autorotate reads it:
/// a phone video tagged `rotate=90` (ffprobe: "rotation of -90.00 degrees") has ``rotation`` 90.
public struct Orientation: Sendable, Equatable, Hashable, Codable {
    /// Clockwise rotation in degrees: 0, 90, 180 or 270.
    public var rotation: Int
    /// Whether the picture is mirrored horizontally before the rotation.
    public var mirrored: Bool

    /// An orientation of `rotation` degrees clockwise (a multiple of 90, any sign), after an optional mirror.
    public init(rotation: Int = 0, mirrored: Bool = false) {
        let r = ((rotation % 360) + 360) % 360
        precondition(r % 90 == 0, "Orientation supports multiples of 90 degrees")
        self.rotation = r
        self.mirrored = mirrored
    }

    /// No change: the stored picture is already upright.
    public static let identity = Orientation()

    /// Whether width and height trade places (rotation by 90 or 270).
    public var swapsAxes: Bool { rotation == 90 || rotation == 270 }

    /// The linear part of the mapping from stored (x, y) to displayed (x', y') in y-down image coordinates:
    /// `x' = a·x + c·y`, `y' = b·x + d·y`, each coefficient in {-1, 0, 1}.
    var matrix: (a: Int, b: Int, c: Int, d: Int) {
        // Mirror: (x, y) → (-x, y); clockwise 90° in y-down coordinates: (x, y) → (-y, x).
        var (a, b, c, d) = mirrored ? (-1, 0, 0, 1) : (1, 0, 0, 1)
        for _ in 0..<(rotation / 90) {
            (a, b, c, d) = (-b, a, -d, c)
        }
        return (a, b, c, d)
    }

    /// Reads a display matrix (nine 16.16 fixed-point values, FFmpeg's layout). Non-right-angle rotations snap to the
    /// nearest multiple of 90° the way a player without free rotation would show them.
    init(displayMatrix m: [Int32]) {
        precondition(m.count >= 5)
        func sign(_ v: Int32) -> Int { v > 0x4000 ? 1 : (v < -0x4000 ? -1 : 0) }
        let target = (a: sign(m[0]), b: sign(m[1]), c: sign(m[3]), d: sign(m[4]))
        for mirrored in [false, true] {
            for rotation in stride(from: 0, to: 360, by: 90) {
                let candidate = Orientation(rotation: rotation, mirrored: mirrored)
                let x = candidate.matrix
                if x.a == target.a && x.b == target.b && x.c == target.c && x.d == target.d {
                    self = candidate
                    return
                }
            }
        }
        // An angle that is no right angle: round it (FFmpeg's `av_display_rotation_get` convention, negated).
        let angle = atan2(Double(m[1]), Double(m[0])) * 180 / Double.pi
        let clockwise = Int((-angle / 90).rounded()) * 90
        self.init(rotation: clockwise, mirrored: Double(m[0]) * Double(m[4]) - Double(m[1]) * Double(m[3]) < 0)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
