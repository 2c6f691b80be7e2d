/// Decides which items to prepare, and how far, around the current one.
///
/// The same policy values run in the live engine (FeedPlayer) and in the virtual-time simulator (PolicyLab): a policy
/// is a pure function of its ``PrefetchContext``.
public protocol PrefetchPolicy: Sendable {
    /// A short name for tables and logs, e.g. `window(2,2)`.
    var name: String { get }
    /// The wanted set for `context`: at most one request per index, the current item included.
    func wanted(in context: PrefetchContext) -> [PrefetchRequest]
}

extension PrefetchPolicy {
    /// Builds requests for offsets from the current item, in order of urgency, dropping indexes past the ends and
    /// duplicates (a short wrapped feed reaches the same item twice).
    func requests(_ context: PrefetchContext, _ offsets: [(offset: Int, stage: PrefetchStage)]) -> [PrefetchRequest] {
        // A handful of entries: a linear scan for duplicates beats hashing (PolicyLab asks once per swipe).
        var out: [PrefetchRequest] = []
        out.reserveCapacity(offsets.count)
        for (rank, entry) in offsets.enumerated() {
            guard let index = context.index(offset: entry.offset), !out.contains(where: { $0.index == index }) else {
                continue
            }
            out.append(PrefetchRequest(index: index, stage: entry.stage, priority: 1000 - rank))
        }
        return out
    }
}

/// The default: current buffered 1 s, `behind` items back and `ahead` items forward at first frame; nearer first,
/// forward before backward at the same distance. Choose it for a general-purpose feed where users sometimes swipe back.
public struct WindowPolicy: PrefetchPolicy {
    public var behind: Int
    public var ahead: Int
    /// Seconds buffered for the current item.
    public var currentSeconds: Double

    /// `behind` and `ahead` items at first frame around a current item buffered `currentSeconds`.
    public init(behind: Int = 2, ahead: Int = 2, currentSeconds: Double = 1) {
        self.behind = behind
        self.ahead = ahead
        self.currentSeconds = currentSeconds
    }

    public var name: String { "window(\(behind),\(ahead))" }

    public func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
        var offsets: [(Int, PrefetchStage)] = [(0, .buffered(seconds: currentSeconds))]
        for d in 1...max(1, max(behind, ahead)) {
            if d <= ahead { offsets.append((d, .firstFrame)) }
            if d <= behind { offsets.append((-d, .firstFrame)) }
        }
        return requests(context, offsets.map { (offset: $0.0, stage: $0.1) })
    }
}

/// Only the next `count` items at first frame (and the current one buffered), as simple feed apps do. Choose it when
/// users almost never swipe back and memory is tight.
public struct ForwardPolicy: PrefetchPolicy {
    public var count: Int

    /// The next `count` items.
    public init(count: Int) { self.count = count }

    public var name: String { "forward\(count)" }

    public func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
        let ahead = count > 0 ? (1...count).map { (offset: $0, stage: PrefetchStage.firstFrame) } : []
        return requests(context, [(offset: 0, stage: .buffered(seconds: 1))] + ahead)
    }
}

/// Current plus the next four at first frame, none behind — TikTok's reported strategy (first chunks of the next 4).
/// Choose it for fast forward scrolling with memory to spare.
public struct TikTokLikePolicy: PrefetchPolicy {
    /// The policy.
    public init() {}

    public var name: String { "tiktokLike" }

    public func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
        requests(context, [(offset: 0, stage: .buffered(seconds: 1))] + (1...4).map { (offset: $0, stage: .firstFrame) })
    }
}

/// Stages by distance like Media3's preload manager: current buffered 2 s, ±1 buffered 1 s, ±2 at first frame,
/// ±3…4 probed. Choose it when playback must start smoothly (not just show a frame) and swipes go both ways.
public struct StagedPolicy: PrefetchPolicy {
    /// The policy.
    public init() {}

    public var name: String { "staged" }

    public func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
        requests(context, [
            (offset: 0, stage: .buffered(seconds: 2)),
            (offset: 1, stage: .buffered(seconds: 1)), (offset: -1, stage: .buffered(seconds: 1)),
            (offset: 2, stage: .firstFrame), (offset: -2, stage: .firstFrame),
            (offset: 3, stage: .probed), (offset: -3, stage: .probed),
            (offset: 4, stage: .probed), (offset: -4, stage: .probed),
        ])
    }
}

extension PrefetchPolicy where Self == WindowPolicy {
    /// ``WindowPolicy``: `behind` back, `ahead` forward at first frame, current buffered 1 s.
    public static func window(behind: Int = 2, ahead: Int = 2) -> WindowPolicy { WindowPolicy(behind: behind, ahead: ahead) }
}

extension PrefetchPolicy where Self == ForwardPolicy {
    /// ``ForwardPolicy``: only the next `count` items.
    public static func forward(_ count: Int) -> ForwardPolicy { ForwardPolicy(count: count) }
}

extension PrefetchPolicy where Self == TikTokLikePolicy {
    /// ``TikTokLikePolicy``: current plus the next 4.
    public static var tiktokLike: TikTokLikePolicy { TikTokLikePolicy() }
}

extension PrefetchPolicy where Self == StagedPolicy {
    /// ``StagedPolicy``: stages by distance, like Media3's preload manager.
    public static var staged: StagedPolicy { StagedPolicy() }
}

extension PrefetchPolicy where Self == SwipeAwarePolicy {
    /// ``SwipeAwarePolicy`` with the default watch-time model.
    public static var swipeAware: SwipeAwarePolicy { SwipeAwarePolicy() }
}

/// The built-in policies by the names the CLI and PolicyLab use: `window`, `forwardN` (e.g. `forward2`), `tiktokLike`,
/// `staged`, `swipeAware`.
public enum BuiltInPolicies {
    /// Every built-in policy with its default parameters.
    public static let all: [any PrefetchPolicy] = [WindowPolicy(), ForwardPolicy(count: 2), TikTokLikePolicy(),
                                                   StagedPolicy(), SwipeAwarePolicy()]

    /// The policy named `name`, or nil.
    public static func named(_ name: String) -> (any PrefetchPolicy)? {
        switch name.lowercased() {
        case "window", "window(2,2)": return WindowPolicy()
        case "tiktoklike", "tiktok": return TikTokLikePolicy()
        case "staged": return StagedPolicy()
        case "swipeaware": return SwipeAwarePolicy()
        default:
            // Up to forward64: each item ahead is a decoder and a first frame, so more than that only exhausts memory.
            if name.lowercased().hasPrefix("forward"), let n = Int(name.dropFirst("forward".count)), n >= 0,
               n <= 64 {
                return ForwardPolicy(count: n)
            }
            return nil
        }
    }
}
