/// How far an item is prepared, in order: ``probed`` < ``firstFrame`` < ``buffered(seconds:)``.
public enum PrefetchStage: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Container opened and stream information read.
    case probed
    /// Decoder open, first frame decoded and converted to the display format.
    case firstFrame
    /// First frame plus this many seconds of decoded frames ahead of the playhead.
    case buffered(seconds: Double)

    @usableFromInline
    var rank: (Int, Double) {
        switch self {
        case .probed: (0, 0)
        case .firstFrame: (1, 0)
        case .buffered(let s): (2, s)
        }
    }

    @inlinable
    public static func < (lhs: PrefetchStage, rhs: PrefetchStage) -> Bool { lhs.rank < rhs.rank }

    /// `probed`, `firstFrame`, `buffered(1.0s)`.
    public var description: String {
        switch self {
        case .probed: "probed"
        case .firstFrame: "firstFrame"
        case .buffered(let s): "buffered(\(s)s)"
        }
    }
}

/// One wanted item: its index in the feed, how far to prepare it, and how urgent it is (higher runs first).
public struct PrefetchRequest: Sendable, Hashable, CustomStringConvertible {
    public var index: Int
    public var stage: PrefetchStage
    /// Higher is more urgent; the current item gets the highest.
    public var priority: Int

    /// A request for `index` at `stage` with `priority`.
    public init(index: Int, stage: PrefetchStage, priority: Int) {
        self.index = index
        self.stage = stage
        self.priority = priority
    }

    public var description: String { "#\(index) \(stage) p\(priority)" }
}

/// One swipe: when, from where, to where.
public struct Swipe: Sendable, Hashable {
    /// Seconds on the caller's monotonic clock.
    public var time: Double
    public var from: Int
    public var to: Int

    /// A swipe from `from` to `to` at `time`.
    public init(time: Double, from: Int, to: Int) {
        self.time = time
        self.from = from
        self.to = to
    }

    /// +1 forward, -1 back, 0 a jump to the same item.
    public var direction: Int { to > from ? 1 : (to < from ? -1 : 0) }
}

/// What a policy decides from.
public struct PrefetchContext: Sendable {
    /// The item on screen.
    public var current: Int
    /// Number of items in the feed.
    public var feedLength: Int
    /// Whether the feed wraps around (after the last item comes the first).
    public var wraps: Bool
    /// Recent swipes, oldest first.
    public var history: [Swipe]
    /// Now, on the same clock as ``Swipe/time``.
    public var now: Double

    /// A context; `history` holds the recent swipes, oldest first.
    public init(current: Int, feedLength: Int, wraps: Bool = false, history: [Swipe] = [], now: Double = 0) {
        self.current = current
        self.feedLength = feedLength
        self.wraps = wraps
        self.history = history
        self.now = now
    }

    /// Seconds spent on the current item so far.
    public var timeOnCurrent: Double { now - (history.last?.time ?? now) }

    /// The item `offset` away from the current one, wrapped or clipped to the feed; nil past an end.
    /// Exact for any `current`, `offset` and `feedLength`: the sum is taken in 128 bits, so no input traps.
    public func index(offset: Int) -> Int? {
        guard feedLength > 0 else { return nil }
        let i = Int128(current) + Int128(offset), n = Int128(feedLength)
        if wraps { return Int(((i % n) + n) % n) }
        return i >= 0 && i < n ? Int(i) : nil
    }
}
