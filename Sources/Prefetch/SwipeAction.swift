/// One swipe: what a viewer does, as FeedPlayer takes it, `videofeed play --swipes` spells it and PolicyLab replays it.
public enum SwipeAction: Sendable, Hashable, CustomStringConvertible {
    /// To the next item.
    case next
    /// To the previous item.
    case previous
    /// To item `index`.
    case jump(Int)

    /// `n`, `p`, `jN` — the spelling of `videofeed play --swipes` and of traces.
    public var description: String {
        switch self {
        case .next: "n"
        case .previous: "p"
        case .jump(let i): "j\(i)"
        }
    }

    /// The item this action leads to from `current` on a feed of `length` items (clamped, or wrapped).
    public func target(from current: Int, length: Int, wraps: Bool) -> Int {
        // In 128 bits: no current, jump or length traps (a jump can come from a client).
        let raw: Int128
        switch self {
        case .next: raw = Int128(current) + 1
        case .previous: raw = Int128(current) - 1
        case .jump(let i): raw = Int128(i)
        }
        guard length > 0 else { return 0 }
        let n = Int128(length)
        return Int(wraps ? ((raw % n) + n) % n : min(max(raw, 0), n - 1))
    }
}

/// Where a viewer is in a feed, and the recent swipes that got them there: what a ``PrefetchPolicy`` reads.
///
/// FeedPlayer's swipes and PolicyLab's simulated viewer move through this one value, so a swipe leads to the same
/// item, and leaves the same history, live and in virtual time.
public struct FeedPosition: Sendable, Hashable {
    /// Swipes kept in ``history`` (the oldest go first).
    public static let historyLimit = 32

    /// The item on screen.
    public private(set) var current: Int
    /// Recent swipes, oldest first, at most ``historyLimit``.
    public private(set) var history: [Swipe] = []
    /// Number of items in the feed (it grows as pages arrive).
    public var length: Int
    /// Whether the feed wraps around: after the last item comes the first.
    public var wraps: Bool

    /// A viewer at item `current` (clamped to the feed) of a feed of `length` items.
    public init(length: Int, wraps: Bool = false, current: Int = 0) {
        self.length = length
        self.wraps = wraps
        self.current = 0
        self.current = target(of: .jump(current))
    }

    /// The item `action` leads to from the current one (clamped to the feed, or wrapped).
    public func target(of action: SwipeAction) -> Int { action.target(from: current, length: length, wraps: wraps) }

    /// Puts the viewer at `index` (clamped or wrapped) without a swipe: the first screen.
    public mutating func place(at index: Int) { current = target(of: .jump(index)) }

    /// Moves by `action` at `time` (seconds on the caller's clock). A move to another item is a swipe and joins the
    /// history; a move to the current item (the end of a feed that does not wrap) is not.
    @discardableResult
    public mutating func move(_ action: SwipeAction, at time: Double) -> (target: Int, isSwipe: Bool) {
        let target = target(of: action)
        let isSwipe = target != current
        if isSwipe {
            history.append(Swipe(time: time, from: current, to: target))
            if history.count > Self.historyLimit { history.removeFirst(history.count - Self.historyLimit) }
        }
        current = target
        return (target, isSwipe)
    }
}
