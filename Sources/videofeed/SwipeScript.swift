import Foundation
import PolicyLab
import Prefetch

/// Parsing of `play`'s swipe scripts (``SwipeList`` is the option's value), and random swipes.
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
}
