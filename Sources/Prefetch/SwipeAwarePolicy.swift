/// Ranks items by the probability of being viewed soon and prepares only what is likely to pay off — the idea of
/// Dashlet (NSDI'23) in a small closed form. Choose it when memory or decode capacity is scarce and users' behaviour
/// varies (patient watchers and fast scrollers in one audience).
///
/// Model: the time a viewer stays on an item is a mixture — with probability ``quickLeave`` they leave within
/// ``quickSeconds``, with probability ``watchToEnd`` they stay the whole ``typicalDuration``, otherwise they leave
/// uniformly in between. Given the time already spent on the current item, the chance that the viewer leaves within
/// ``horizon`` seconds is `p`. The next item is viewed soon with probability `p`; the one after with `p·q`, where `q`
/// is the chance of skipping quickly (``quickLeave``, or the share of quick swipes in the recent history, which is how
/// fast scrolling raises the depth); items behind are weighted by the back-swipe rate. Items scoring at least
/// ``firstFrameThreshold`` get a first frame, at least ``probeThreshold`` a probe; the rest are dropped. The next item
/// always gets at least a first frame.
public struct SwipeAwarePolicy: PrefetchPolicy {
    public var quickLeave: Double
    public var quickSeconds: Double
    public var watchToEnd: Double
    public var typicalDuration: Double
    public var horizon: Double
    public var backRate: Double
    public var firstFrameThreshold: Double
    public var probeThreshold: Double
    public var maxDistance: Int

    /// The model with the defaults described on the type (0.16 quick leaves in 2 s, 0.40 to the end of a 15 s item,
    /// a 3 s horizon, 10 % back swipes, thresholds 0.05 and 0.01, at most 4 items away).
    public init(quickLeave: Double = 0.16, quickSeconds: Double = 2, watchToEnd: Double = 0.40,
                typicalDuration: Double = 15, horizon: Double = 3, backRate: Double = 0.10,
                firstFrameThreshold: Double = 0.05, probeThreshold: Double = 0.01, maxDistance: Int = 4) {
        self.quickLeave = quickLeave
        self.quickSeconds = quickSeconds
        self.watchToEnd = watchToEnd
        self.typicalDuration = typicalDuration
        self.horizon = horizon
        self.backRate = backRate
        self.firstFrameThreshold = firstFrameThreshold
        self.probeThreshold = probeThreshold
        self.maxDistance = maxDistance
    }

    public var name: String { "swipeAware" }

    /// Probability of having left by time `t` on an item.
    func leftBy(_ t: Double) -> Double {
        let t = max(0, t)
        let middle = 1 - quickLeave - watchToEnd
        var p = quickLeave * min(t / quickSeconds, 1)
        if t > quickSeconds {
            p += middle * min((t - quickSeconds) / max(typicalDuration - quickSeconds, 0.001), 1)
        }
        if t >= typicalDuration { p = 1 }
        return min(p, 1)
    }

    /// Probability that the viewer leaves the current item within the horizon, having stayed `spent` seconds.
    func leaveSoon(spent: Double) -> Double {
        let stayed = 1 - leftBy(spent)
        guard stayed > 1e-9 else { return 1 }
        return min(1, (leftBy(spent + horizon) - leftBy(spent)) / stayed)
    }

    /// Scores for offsets ±1…maxDistance.
    func scores(in context: PrefetchContext) -> [(offset: Int, score: Double)] {
        let p = leaveSoon(spent: context.timeOnCurrent)
        let recent = context.history.suffix(10)
        var dwells: [Double] = []
        for (a, b) in zip(recent, recent.dropFirst()) { dwells.append(b.time - a.time) }
        let q = dwells.count >= 3 ? Double(dwells.filter { $0 < quickSeconds }.count) / Double(dwells.count) : quickLeave
        let backs = recent.filter { $0.direction < 0 }.count
        let back = recent.count >= 3 ? max(Double(backs) / Double(recent.count), 0.02) : backRate
        var out: [(Int, Double)] = []
        for d in 1...max(1, maxDistance) {
            let chain = pow(max(q, 0.0), Double(d - 1))
            out.append((d, p * chain))
            out.append((-d, p * back * chain))
        }
        return out.sorted { $0.1 > $1.1 }.map { (offset: $0.0, score: $0.1) }
    }

    public func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
        var offsets: [(offset: Int, stage: PrefetchStage)] = [(0, .buffered(seconds: 1))]
        for (offset, score) in scores(in: context) {
            if offset == 1 || score >= firstFrameThreshold {
                offsets.append((offset, .firstFrame))
            } else if score >= probeThreshold {
                offsets.append((offset, .probed))
            }
        }
        return requests(context, offsets)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
