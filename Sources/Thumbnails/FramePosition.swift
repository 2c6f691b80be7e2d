import Foundation

/// Where in an item a thumbnail is taken.
///
/// Spelled on the command line as `10%` (a fraction of the duration), `3.5s` or `3.5` (seconds from the start) or
/// `auto` (the most representative keyframe, see ``FrameChooser``).
public enum FramePosition: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A fraction of the duration, 0…1 (`10%` is 0.1).
    case fraction(Double)
    /// Seconds from the start.
    case seconds(Double)
    /// The candidate closest to the average histogram of non-blank keyframes.
    case auto

    /// The latest time a position may name: 1,000,000 s (11.6 days), longer than any feed item.
    public static let maxSeconds = 1_000_000.0

    /// Parses `10%`, `3.5s`, `3.5` or `auto`; nil for anything else (negative values, percentages over 100, times
    /// past ``maxSeconds``).
    public init?(parsing text: String) {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        if t == "auto" {
            self = .auto
        } else if t.hasSuffix("%"), let v = Double(t.dropLast()), v.isFinite, v >= 0, v <= 100 {
            self = .fraction(v / 100)
        } else if let v = Double(t.hasSuffix("s") ? String(t.dropLast()) : t), v.isFinite, v >= 0,
                  v <= Self.maxSeconds {
            self = .seconds(v)
        } else {
            return nil
        }
    }

    /// Parses a comma-separated list (`10%,50%,90%`); nil if any element is invalid or the list is empty.
    public static func parseList(_ text: String) -> [FramePosition]? {
        let parts = text.split(separator: ",").map { FramePosition(parsing: String($0)) }
        guard !parts.isEmpty, !parts.contains(where: { $0 == nil }) else { return nil }
        return parts.compactMap { $0 }
    }

    /// The position as typed on the command line: `10%`, `3.5s`, `auto`.
    public var description: String {
        switch self {
        case .fraction(let f): "\(Self.trim(f * 100))%"
        case .seconds(let s): "\(Self.trim(s))s"
        case .auto: "auto"
        }
    }

    /// The target time in seconds for an item of `duration` seconds (nil when unknown); nil for ``auto``.
    func target(duration: Double?) -> Double? {
        switch self {
        case .fraction(let f): (duration ?? 0) * f
        case .seconds(let s): s
        case .auto: nil
        }
    }

    private static func trim(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
    }
}
