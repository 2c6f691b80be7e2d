import Foundation

/// The scheduling decisions of prefetching, as pure functions of the slots' state: which work is still needed,
/// which queued job starts next and on which lane, when a job has done enough, which frames the memory budget evicts
/// first, and which open decoders are kept.
///
/// ``PrefetchScheduler`` (live, on Dispatch) and PolicyLab's virtual-time simulator both call these rules, so the two
/// cannot drift apart: a change here changes both. The rules hold no state of their own; the caller owns the slots.
public struct PrefetchRules: Sendable, Hashable {
    /// Number of background worker lanes; one more lane (index `workers`) is kept for the item on screen.
    public var workers: Int
    /// Maximum decoded bytes held across slots.
    public var budget: Int
    /// Open decoders are kept only for items at most this far from the current one.
    public var keepHandlesWithin: Int
    /// Number of items in the feed.
    public var feedLength: Int
    /// Whether the feed wraps around.
    public var wraps: Bool
    /// The largest first pass an item may hold to loop from (``holdsLoop(frames:bytes:)``).
    public var loopHold: LoopHold

    /// How long a first pass an item may keep to loop from instead of decoding it again at every wrap: at most
    /// `frames` frames and `bytes` bytes (charged against the budget while held).
    public struct LoopHold: Sendable, Hashable {
        /// Frames in the whole first pass, at most.
        public var frames: Int
        /// Bytes of the whole first pass, at most.
        public var bytes: Int
        /// A bound of `frames` frames and `bytes` bytes; zero of either holds nothing.
        public init(frames: Int, bytes: Int) {
            self.frames = frames
            self.bytes = bytes
        }
        /// The default for a budget: a second at 30 fps, an eighth of the budget (32 MiB of 256 MiB: eight
        /// 720x1280 BGRA frames, thirty at 360x640).
        public static func standard(budget: Int) -> LoopHold { LoopHold(frames: 30, bytes: max(0, budget / 8)) }
        /// Holds nothing: every loop is decoded again.
        public static let none = LoopHold(frames: 0, bytes: 0)
    }

    /// Rules for `workers` background lanes (at least 1) and `budget` bytes; `loopHold` nil is
    /// ``LoopHold/standard(budget:)``.
    public init(workers: Int, budget: Int, keepHandlesWithin: Int = 1, feedLength: Int, wraps: Bool = false,
                loopHold: LoopHold? = nil) {
        self.workers = max(1, workers)
        self.budget = budget
        self.keepHandlesWithin = keepHandlesWithin
        self.feedLength = feedLength
        self.wraps = wraps
        self.loopHold = loopHold ?? .standard(budget: budget)
    }

    /// Whether an item whose whole first pass is `frames` frames of `bytes` in all may keep it to loop from (the
    /// budget permitting: the state machine charges it, ``PrefetchStateMachine/holdLoop(frames:bytes:to:lane:)``).
    /// A still (one frame) is held by its preparer anyway.
    @inlinable
    public func holdsLoop(frames: Int, bytes: Int) -> Bool {
        frames >= 2 && frames <= loopHold.frames && bytes <= loopHold.bytes
    }

    /// The lane kept for the item on screen.
    @inlinable
    public var urgentLane: Int { workers }

    /// The nice level of the lane kept for the item on screen: normal priority, far above the background lanes. (A
    /// swipe never waits for this lane, so it need not yield to the caller's threads; at nice 5 a cold item's first
    /// frame lost up to a quarter of its speed to any other work on the machine.)
    public static let urgentLaneNice: Int32 = 0
    /// The nice level of the background lanes.
    public static let backgroundLaneNice: Int32 = 10

    /// The nice level a lane's thread runs at.
    @inlinable
    public func nice(ofLane lane: Int) -> Int32 { lane == urgentLane ? Self.urgentLaneNice : Self.backgroundLaneNice }

    /// Linux's CFS weight for a nice level (1024 at nice 0, about 1.25× less per step: 335 at 5, 110 at 10), how
    /// the scheduler shares a core between runnable threads. PolicyLab shares its virtual cores by it.
    @inlinable
    public static func cpuWeight(nice: Int32) -> Double {
        switch nice {
        case 0: 1024
        case 5: 335
        case 10: 110
        default: 1024 / pow(1.25, Double(nice))
        }
    }

    /// Items between `index` and `current`, the short way round on a wrapping feed.
    @inlinable
    public func distance(_ index: Int, from current: Int) -> Int {
        let d = abs(index - current)
        return wraps && feedLength > 0 ? min(d, feedLength - d) : d
    }

    /// Whether an item at `index` keeps its open decoder between jobs while `current` is on screen.
    @inlinable
    public func keepsHandle(_ index: Int, current: Int) -> Bool { distance(index, from: current) <= keepHandlesWithin }

    /// Whether a slot still needs work for its wanted stage: never once it failed, nor while the budget starved it,
    /// nor while it waits for room in the budget.
    @inlinable
    public static func needsWork(wanted: PrefetchStage?, reached: PrefetchStage?, hasFirstFrame: Bool,
                                 bufferedSeconds: Double, failed: Bool, starved: Bool,
                                 waitingForRoom: Bool = false) -> Bool {
        guard let wanted, !failed, !starved, !waitingForRoom else { return false }
        switch wanted {
        case .probed: return reached == nil
        case .firstFrame: return !hasFirstFrame
        case .buffered(let seconds): return !hasFirstFrame || bufferedSeconds < seconds
        }
    }

    /// Whether a running job goes on after its deliveries so far: it has a first frame once it delivered one (or
    /// the item had one), and a buffered target counts the seconds delivered after the first frame.
    @inlinable
    public static func jobNeedsMore(target: PrefetchStage, hadFirstFrame: Bool, bufferedAtStart: Double,
                                    delivered: Int, deliveredSeconds: Double, stopped: Bool) -> Bool {
        if stopped { return false }
        let hasFirst = hadFirstFrame || delivered > 0
        switch target {
        case .probed: return false
        case .firstFrame: return !hasFirst
        case .buffered(let seconds): return !hasFirst || bufferedAtStart + deliveredSeconds < seconds
        }
    }

    /// How many buffered frames, from the newest, a lowered buffered target drops: frames whose removal still leaves
    /// at least `target` seconds. `durations` are the buffered frames' durations, oldest first. (Inlinable so that
    /// callers get it specialized for their collection.)
    @inlinable
    public static func framesOverTarget<C: BidirectionalCollection>(_ durations: C, target: Double) -> Int
    where C.Element == Double {
        var total = 0.0
        for d in durations { total += d }
        var count = 0
        for d in durations.reversed() {
            guard total - d >= target else { break }
            total -= d
            count += 1
        }
        return count
    }

    /// One queued job as the start rule sees it.
    public struct Queued: Sendable, Hashable {
        /// The item.
        public var index: Int
        /// Its wanted request's priority (higher runs first).
        public var priority: Int
        /// What the job is for, which outranks the priority: a first frame, more frames, or only a decoder.
        public var kind: Kind

        /// What a queued job is for, most urgent first: a missing first frame (a swipe to the item would be a miss
        /// without it), more frames for a buffered stage, or only a decoder positioned after the frames held.
        public enum Kind: Int, Sendable, Hashable, Comparable {
            case decoder = 0, frames = 1, firstFrame = 2
            public static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
        }

        /// A queued job of a slot.
        public init(index: Int, priority: Int, kind: Kind = .frames) {
            self.index = index
            self.priority = priority
            self.kind = kind
        }
    }

    /// The item on screen as the start rule sees it.
    public struct CurrentState: Sendable, Hashable {
        /// The item on screen.
        public var index: Int
        /// Whether its first frame is held.
        public var hasFirstFrame: Bool
        /// Whether its job is queued (not yet running) and whether one is running.
        public var jobQueued: Bool
        public var jobRunning: Bool
        /// Whether playback is about to run dry: it holds its first frame but less than
        /// ``PrefetchRules/playbackLowWater`` seconds after it, and wants more.
        public var runningDry: Bool
        /// The on-screen item's state.
        public init(index: Int, hasFirstFrame: Bool, jobQueued: Bool, jobRunning: Bool, runningDry: Bool = false) {
            self.index = index
            self.hasFirstFrame = hasFirstFrame
            self.jobQueued = jobQueued
            self.jobRunning = jobRunning
            self.runningDry = runningDry
        }

        /// Whether the item on screen is behind: no first frame yet, or playback about to run dry.
        @inlinable
        public var isBehind: Bool { !hasFirstFrame || runningDry }
    }

    /// Seconds of decoded frames ahead of playback below which the item on screen is running dry: until it has
    /// them again, no other job starts, and its job never runs on a background lane. (A tenth of a second is a few
    /// frames: enough to ride out a wake-up, short enough that neighbours' first frames are not held back long.)
    public static let playbackLowWater = 0.1

    /// Whether the item on screen, holding `bufferedSeconds` after its first frame, runs dry for its wanted stage.
    @inlinable
    public static func runsDry(wanted: PrefetchStage?, hasFirstFrame: Bool, bufferedSeconds: Double) -> Bool {
        guard hasFirstFrame, case .buffered(let seconds)? = wanted else { return false }
        return bufferedSeconds < min(seconds, playbackLowWater)
    }

    /// Which queued jobs start now, and on which lane (most urgent first).
    ///
    /// The item on screen has absolute priority. It starts on the lane kept for it (normal priority) when that lane
    /// is free, else on a background lane (while it is behind nothing else runs there, so it has a core; the state
    /// machine moves it to its own lane as soon as that is free). Background lanes then take queued jobs by what they
    /// are for (``Queued/Kind``: first frames, then more frames, then decoders), then by priority (ties: lower index
    /// first) — but while the item on screen is behind (``CurrentState/isBehind``: no first frame
    /// yet, or playback about to run dry) and its job runs or has just started, nothing else starts, so it has the CPU
    /// to itself.
    /// - Parameters:
    ///   - current: the on-screen item's slot, nil when it has none.
    ///   - queued: every queued job (including the current item's, if queued).
    ///   - laneBusy: one flag per lane, `workers + 1` of them, the last for the urgent lane.
    public func jobsToStart(current: CurrentState?, queued: [Queued], laneBusy: [Bool]) -> [(index: Int, lane: Int)] {
        var starts: [(index: Int, lane: Int)] = []
        var currentWaits = false
        // Whether the current item's queued job left the waiting list for the urgent lane.
        var currentStarted = false
        if let current {
            currentWaits = current.isBehind && current.jobRunning
            if current.jobQueued, !laneBusy[urgentLane] {
                starts.append((current.index, urgentLane))
                currentStarted = true
                currentWaits = current.isBehind
            }
        }
        guard !currentWaits else { return starts }
        // Positions in `queued` already started (this runs for every job the simulator starts: no allocation unless
        // more than 64 jobs are queued).
        var picked = PositionSet()
        for lane in 0..<workers where !laneBusy[lane] {
            var best = -1
            for i in queued.indices {
                let q = queued[i]
                if currentStarted && q.index == current!.index || picked.contains(i) { continue }
                if best < 0 || Self.isMoreUrgent(q, than: queued[best]) { best = i }
            }
            guard best >= 0 else { break }
            starts.append((queued[best].index, lane))
            picked.insert(best)
            if let current, queued[best].index == current.index, current.isBehind { break }
        }
        return starts
    }

    /// A set of small non-negative integers: a bit mask for the first 64, an array beyond.
    private struct PositionSet {
        var mask: UInt64 = 0
        var more: [Int] = []
        func contains(_ i: Int) -> Bool { i < 64 ? mask & (1 << UInt64(i)) != 0 : more.contains(i) }
        mutating func insert(_ i: Int) {
            if i < 64 { mask |= 1 << UInt64(i) } else { more.append(i) }
        }
    }

    /// Whether queued job `a` is more urgent than `b`: higher priority, then lower index.
    private static func isMoreUrgent(_ a: Queued, than b: Queued) -> Bool {
        if a.kind != b.kind { return a.kind > b.kind }
        return a.priority > b.priority || (a.priority == b.priority && a.index < b.index)
    }

    /// Whether `bytes` more fit when `held` bytes are held.
    @inlinable
    public func fits(_ bytes: Int, held: Int) -> Bool { held + bytes <= budget }

    /// Whose frames the budget may drop, in order, to make room for a frame delivered to item `index`.
    ///
    /// A first frame is worth more than any buffered frame, and among frames of one kind a nearer slot's are worth
    /// more; so an incoming first frame may evict other slots' buffered frames and farther slots' first frames,
    /// an incoming buffered frame only farther slots' buffered frames. The item on screen's buffered frames are never
    /// evicted: playback is already past the frames before them, so they could not be decoded again without a gap.
    /// Victims go farthest slot first (ties: higher index first), newest frame first within a slot; the caller drops
    /// frames in this order until the frame fits.
    /// - Returns: slots whose buffered frames may go, then slots whose first frames may go, each in eviction order.
    public func evictionOrder(for index: Int, incomingIsFirst: Bool, current: Int,
                              others: [Int]) -> (buffered: [Int], first: [Int]) {
        let mine = distance(index, from: current)
        var order: [(distance: Int, index: Int)] = []
        order.reserveCapacity(others.count)
        for other in others where other != index { order.append((distance(other, from: current), other)) }
        order.sort { $0.distance != $1.distance ? $0.distance > $1.distance : $0.index > $1.index }
        var buffered: [Int] = [], first: [Int] = []
        for entry in order {
            let farther = entry.distance > mine
            if (incomingIsFirst || farther) && entry.index != current { buffered.append(entry.index) }
            if incomingIsFirst && farther { first.append(entry.index) }
        }
        return (buffered, first)
    }
}
