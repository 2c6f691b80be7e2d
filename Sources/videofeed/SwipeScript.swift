import Foundation
import PolicyLab
import Prefetch

/// Parsing of `play`'s options, and random swipes.
enum SwipeScript {
    /// `"n,n,p,j5"` → actions; nil if any entry is not n, p or jN.
    static func parse(_ text: String) -> [SwipeAction]? {
        var out: [SwipeAction] = []
        for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) {
            switch part {
            case "n", "next": out.append(.next)
            case "p", "prev", "previous": out.append(.previous)
            default:
                guard part.hasPrefix("j"), let i = Int(part.dropFirst()), i >= 0 else { return nil }
                out.append(.jump(i))
            }
        }
        return out.isEmpty ? nil : out
    }

    /// Random swipes: 80 % next, 15 % previous, 5 % a jump anywhere.
    static func random(count: Int, feedLength: Int, rng: inout SimRandom) -> [SwipeAction] {
        (0..<count).map { _ in
            let r = rng.next() % 100
            if r < 80 { return .next }
            if r < 95 { return .previous }
            return .jump(Int(rng.next() % UInt64(max(feedLength, 1))))
        }
    }

    /// `"250-1500"` (or `"300"`) → 250...1500; each end from 0 to a day (86,400,000 ms).
    static func range(_ text: String) -> ClosedRange<Int>? {
        let day = 86_400_000
        let parts = text.split(separator: "-").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        if parts.count == 1, let v = parts[0], v >= 0, v <= day { return v...v }
        guard parts.count == 2, let lo = parts[0], let hi = parts[1], lo >= 0, hi >= lo, hi <= day else { return nil }
        return lo...hi
    }

    /// `"256MiB"`, `"64M"`, `"1GiB"`, `"1048576"` → bytes; nil for anything not from 1 byte to 1 PiB.
    static func bytes(_ text: String) -> Int? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Int)] = [("gib", 1 << 30), ("g", 1 << 30), ("mib", 1 << 20), ("m", 1 << 20),
                                      ("kib", 1 << 10), ("k", 1 << 10), ("b", 1)]
        for (suffix, scale) in units where t.hasSuffix(suffix) {
            guard let v = Double(t.dropLast(suffix.count)), v > 0, v * Double(scale) <= Double(1 << 50) else {
                return nil
            }
            return max(1, Int(v * Double(scale)))
        }
        guard let v = Int(t), v > 0, v <= 1 << 50 else { return nil }
        return v
    }
}
