import Dispatch
import Foundation
import EngineSupport

/// Runs a ``PrefetchPolicy`` against a ``PrefetchPreparer`` on Dispatch, within a memory budget.
///
/// One serial control queue owns every slot, job and counter; `@unchecked Sendable` is safe because all mutable state
/// is only touched on `control` (the public methods hop onto it). Work runs on `workers` serial lanes (one job per
/// lane at a time, highest priority first). Each item has at most one job: a new request for an item merges into it.
/// When an item leaves the wanted set its queued job never runs and its running job's ``WorkToken`` is cancelled;
/// its frames and handle are released. Decoded bytes across all slots never exceed the budget: a delivery that would
/// go over first evicts frames worth less — buffered frames before first frames, the farthest slot's first — and is
/// dropped if that is not enough (see `evict`). Every decision — what needs work, what starts next on which lane,
/// what the budget evicts first, which decoders are kept — is taken by ``PrefetchRules``, which PolicyLab's
/// virtual-time simulator calls too.
public final class PrefetchScheduler<Preparer: PrefetchPreparer>: @unchecked Sendable {
    public typealias Frame = Preparer.Frame

    /// The engine doing the work.
    public let preparer: Preparer
    /// Maximum decoded bytes held across slots.
    public let budget: Int
    /// Number of worker lanes.
    public let workerCount: Int
    /// Open decoders (preparer handles) are kept only for items at most this far from the current one; farther
    /// items keep their frames but release their decoder, which holds far more memory than one frame.
    public let keepHandlesWithin: Int

    private let control = DispatchQueue(label: "videofeed.prefetch.control")
    /// Dropped frames and closed decoders are freed here, off the control queue and a little later, so that neither
    /// a swipe nor the decode of the item on screen competes with returning memory to the system.
    private let reclaim = DispatchQueue(label: "videofeed.prefetch.reclaim")
    private let reclaiming = DispatchGroup()
    private let lanes: [WorkerLane]
    private var laneBusy: [Bool]
    private var policy: any PrefetchPolicy
    private var feedLength: Int { didSet { rules.feedLength = feedLength } }
    private let wraps: Bool
    /// The scheduling decisions, shared with PolicyLab.
    private var rules: PrefetchRules
    private var current = 0
    private var slots: [Int: Slot] = [:]
    private var tally = PrefetchCounters()
    private var idleWaiters: [@Sendable () -> Void] = []
    private var eventHandler: (@Sendable (PrefetchEvent) -> Void)?

    /// What a swipe needs to know about an item, readable without waiting for the control queue.
    private struct Shown {
        var first: Frame?
        var failure: String?
    }

    /// Each slot's first frame and failure, copied here (on the control queue) whenever they change, so that
    /// ``swipe(to:history:now:)`` answers from this board under its own short lock while the control queue may be
    /// busy. Entries go when their slot is released.
    private let board = Locked<[Int: Shown]>([:])

    private final class Slot {
        let index: Int
        let board: Locked<[Int: Shown]>
        var wanted: PrefetchRequest? { didSet { if (oldValue == nil) != (wanted == nil) { post() } } }
        var stage: PrefetchStage?
        var first: Frame? { didSet { post() } }
        var firstBytes = 0
        var buffer: [(frame: Frame, bytes: Int, duration: Double)] = []
        var handle: Preparer.Handle?
        var job: Job?
        var failure: String? { didSet { post() } }
        /// Set when the budget evicted this slot: do not refill it until the current item changes.
        var starved = false
        init(index: Int, board: Locked<[Int: Shown]>) {
            self.index = index
            self.board = board
        }
        /// Copies the first frame and failure to the board (an entry only while the slot is wanted).
        func post() {
            let shown = wanted == nil || (first == nil && failure == nil) ? nil : Shown(first: first, failure: failure)
            board.withLock { $0[index] = shown }
        }
        var bytes: Int { firstBytes + buffer.reduce(0) { $0 + $1.bytes } }
        var bufferedSeconds: Double { buffer.reduce(0) { $0 + $1.duration } }
    }

    /// `running` and `lane` are only touched on the control queue; `token` is itself thread-safe.
    private final class Job: @unchecked Sendable {
        let token = WorkToken()
        var running = false
        var lane = -1
        var work: PrefetchJob<Frame>?
    }

    /// - Parameters:
    ///   - preparer: does the work.
    ///   - policy: decides the wanted set.
    ///   - feedLength: number of items (update with ``setFeedLength(_:)``).
    ///   - wraps: whether the feed wraps around.
    ///   - workers: concurrent jobs (default: active cores).
    ///   - budget: maximum decoded bytes held across slots.
    ///   - keepHandlesWithin: keep open decoders for items at most this far from the current one (default 1).
    public init(preparer: Preparer, policy: any PrefetchPolicy, feedLength: Int, wraps: Bool = false,
                workers: Int = ProcessInfo.processInfo.activeProcessorCount, budget: Int, keepHandlesWithin: Int = 1) {
        self.keepHandlesWithin = keepHandlesWithin
        self.preparer = preparer
        self.policy = policy
        self.feedLength = feedLength
        self.wraps = wraps
        self.workerCount = max(1, workers)
        self.budget = budget
        self.rules = PrefetchRules(workers: workers, budget: budget, keepHandlesWithin: keepHandlesWithin,
                                   feedLength: feedLength, wraps: wraps)
        // One more lane than workers, kept for the item on screen; the nice levels are the rules' (PolicyLab shares
        // its virtual cores by the same levels).
        let rules = self.rules
        self.lanes = (0...max(1, workers)).map {
            WorkerLane(name: "videofeed.prefetch.worker\($0)", nice: rules.nice(ofLane: $0))
        }
        self.laneBusy = Array(repeating: false, count: max(1, workers) + 1)
    }

    deinit { for lane in lanes { lane.stop() } }

    /// Receives every ``PrefetchEvent``, on the control queue: return quickly.
    public func setEventHandler(_ handler: (@Sendable (PrefetchEvent) -> Void)?) {
        control.sync { eventHandler = handler }
    }

    /// Replaces the policy; the wanted set is recomputed at the next ``update(current:history:now:)``.
    public func setPolicy(_ policy: any PrefetchPolicy) { control.sync { self.policy = policy } }

    /// Sets the number of items (a feed that grew by paging).
    public func setFeedLength(_ length: Int) { control.sync { feedLength = length } }

    /// Applies the policy for a new current item and history: cancels and releases what left the wanted set, queues
    /// or retargets the rest, starts work. Returns the wanted set.
    @discardableResult
    public func update(current: Int, history: [Swipe] = [], now: Double = 0) -> [PrefetchRequest] {
        control.sync { apply(current: current, history: history, now: now) }
    }

    /// A swipe: the new current item's first frame (or failure) as the control queue last published it, returned at
    /// once without waiting for that queue, and ``update(current:history:now:)`` queued behind whatever it is doing.
    /// Updates from successive swipes run in the order of the calls. A frame returned here may belong to a slot the
    /// queued update is about to release; it stays valid for as long as the caller holds it.
    public func swipe(to current: Int, history: [Swipe] = [], now: Double = 0) -> (first: Frame?, failure: String?) {
        let shown = board.withLock { $0[current] }
        control.async { self.apply(current: current, history: history, now: now) }
        return (shown?.first, shown?.failure)
    }

    /// Item `index`'s first frame and failure as the control queue last published them (both nil when the item is
    /// not in the wanted set or has neither yet), without waiting for that queue.
    public func published(_ index: Int) -> (first: Frame?, failure: String?) {
        let shown = board.withLock { $0[index] }
        return (shown?.first, shown?.failure)
    }

    /// ``update(current:history:now:)`` and ``snapshot(_:)`` of the new current item in one step. One hop onto the
    /// control queue: a second one would wait behind the work the update just queued.
    public func move(to current: Int, history: [Swipe] = [], now: Double = 0) -> SlotSnapshot<Frame>? {
        control.sync {
            apply(current: current, history: history, now: now)
            return snapshotLocked(current)
        }
    }

    @discardableResult
    private func apply(current: Int, history: [Swipe], now: Double) -> [PrefetchRequest] {
        let changed = current != self.current
        self.current = current
        let context = PrefetchContext(current: current, feedLength: feedLength, wraps: wraps, history: history, now: now)
        let wanted = policy.wanted(in: context)
        let byIndex = Dictionary(wanted.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        for (index, slot) in slots where byIndex[index] == nil { release(slot, index: index) }
        for request in wanted {
            let slot = slots[request.index] ?? { let s = Slot(index: request.index, board: board); slots[request.index] = s; return s }()
            slot.wanted = request
            if changed { slot.starved = false }
            if !rules.keepsHandle(request.index, current: current) { releaseHandle(slot) }
            trimToTarget(slot)
            schedule(slot)
        }
        // Start work after this call returns: a swipe's caller gets its answer before any worker wakes up.
        control.async { self.pump() }
        return wanted
    }

    /// A copy of item `index`'s state (nil when the item is not in the wanted set).
    public func snapshot(_ index: Int) -> SlotSnapshot<Frame>? { control.sync { snapshotLocked(index) } }

    private func snapshotLocked(_ index: Int) -> SlotSnapshot<Frame>? {
        guard let s = slots[index] else { return nil }
        return SlotSnapshot(index: index, stage: s.stage, firstFrame: s.first, bufferedFrames: s.buffer.count,
                            bufferedSeconds: s.bufferedSeconds, failure: s.failure, busy: s.job != nil)
    }

    /// Indexes currently held (the wanted set plus slots whose cancelled job has not yet returned).
    public var slotIndexes: [Int] { control.sync { slots.keys.sorted() } }

    /// The counters, with exact byte accounting.
    public var counters: PrefetchCounters { control.sync { tally } }

    /// Takes the next buffered frame of item `index` (after its first frame) for playback, releasing its bytes and
    /// queueing a top-up of the buffer. Nil when none is buffered yet.
    public func takeBufferedFrame(_ index: Int) -> Frame? {
        control.sync {
            guard let s = slots[index], !s.buffer.isEmpty else { return nil }
            let taken = s.buffer.removeFirst()
            tally.decodedBytes -= taken.bytes
            schedule(s)
            pump()
            return taken.frame
        }
    }

    /// Runs `body` (on the control queue) once no job is queued or running.
    public func whenIdle(_ body: @escaping @Sendable () -> Void) {
        control.async {
            if self.isIdle { body() } else { self.idleWaiters.append(body) }
        }
    }

    /// Blocks until no job is queued or running, or `timeout` seconds pass. Returns whether it became idle.
    /// Memory of dropped frames and closed decoders is freed too before it returns.
    @discardableResult
    public func waitUntilIdle(timeout: Double) -> Bool {
        let done = DispatchSemaphore(value: 0)
        whenIdle { done.signal() }
        guard done.wait(timeout: .now() + timeout) == .success else { return false }
        return reclaiming.wait(timeout: .now() + timeout) == .success
    }

    /// Cancels every job and releases every slot.
    public func shutdown() {
        control.sync {
            for (index, slot) in slots { release(slot, index: index) }
            pump()
        }
    }

    // MARK: - Control queue only

    private var isIdle: Bool { !slots.values.contains { $0.job != nil } }

    private func emit(_ event: PrefetchEvent) { eventHandler?(event) }

    /// Whether the slot still needs work for its wanted stage.
    private func needsWork(_ s: Slot) -> Bool {
        PrefetchRules.needsWork(wanted: s.wanted?.stage, reached: s.stage, hasFirstFrame: s.first != nil,
                                bufferedSeconds: s.bufferedSeconds, failed: s.failure != nil, starved: s.starved)
    }

    /// Queues a job for the slot if it needs one and has none (a request for an item with a job merges into it).
    private func schedule(_ s: Slot) {
        if s.job != nil {
            if needsWork(s) { tally.merged += 1 }
            return
        }
        guard needsWork(s) else { return }
        s.job = Job()
    }

    /// Drops what a lowered target no longer needs (the current item became a neighbour, a neighbour moved away).
    private func trimToTarget(_ s: Slot) {
        guard let wanted = s.wanted else { return }
        if let job = s.job, job.running, !needsWork(s) { job.work?.stop() }
        switch wanted.stage {
        case .probed:
            drop(s, firstToo: true)
        case .firstFrame:
            drop(s, firstToo: false)
        case .buffered(let seconds):
            for _ in 0..<PrefetchRules.framesOverTarget(s.buffer.map(\.duration), target: seconds) {
                let last = s.buffer.removeLast()
                tally.decodedBytes -= last.bytes
                tally.framesDropped += 1
            }
        }
    }

    /// Releases a slot that left the wanted set: cancels its job, drops frames and handle.
    private func release(_ s: Slot, index: Int) {
        if s.wanted == nil { return }  // already released; its cancelled job has not returned yet
        s.wanted = nil
        if let job = s.job {
            if job.running {
                tally.cancelledWhileRunning += 1
                job.token.cancel()
                emit(.cancelled(index: index, running: true))
            } else {
                tally.cancelledBeforeStart += 1
                s.job = nil
                emit(.cancelled(index: index, running: false))
            }
        }
        drop(s, firstToo: true)
        releaseHandle(s)
        if s.job == nil { slots[index] = nil }
    }

    /// Lets go of `garbage` on the reclaim queue 50 ms from now: after a swipe's answer and, usually, after the first
    /// frame of a cold item (so freeing does not compete with it), yet soon enough that garbage from fast swipes does
    /// not pile up on top of the budget (a current item's dropped 1 s buffer alone is ~110 MB at 720x1280 BGRA).
    private func dispose<T: Sendable>(_ garbage: T, after delay: Double = 0.05) {
        reclaiming.enter()
        reclaim.asyncAfter(deadline: .now() + delay) { [reclaiming] in
            withExtendedLifetime(garbage) {}
            reclaiming.leave()
        }
    }

    /// Closes the slot's decoder off the control queue (freeing a decoder can take milliseconds).
    private func releaseHandle(_ s: Slot) {
        guard let handle = s.handle else { return }
        s.handle = nil
        // An open decoder holds tens of megabytes outside the budget: close it at once (still off this queue).
        dispose(handle, after: 0)
    }

    private func drop(_ s: Slot, firstToo: Bool) {
        tally.decodedBytes -= s.buffer.reduce(0) { $0 + $1.bytes }
        tally.framesDropped += s.buffer.count
        var garbage: [Frame] = s.buffer.map(\.frame)
        s.buffer.removeAll()
        if firstToo, let first = s.first {
            garbage.append(first)
            tally.decodedBytes -= s.firstBytes
            tally.framesDropped += 1
            s.first = nil
            s.firstBytes = 0
            if let stage = s.stage, stage > .probed { s.stage = .probed }
        }
        if !garbage.isEmpty {
            let frames = garbage
            dispose(frames)
        }
    }

    /// Starts queued jobs on free lanes as ``PrefetchRules/jobsToStart(current:queued:laneBusy:)`` decides: the
    /// item on screen on the lane kept for it (normal priority), so it never waits for a background lane; the others
    /// on background lanes (nice 10), most urgent first, none while the item on screen waits for its first frame.
    private func pump() {
        let currentState = slots[current].map {
            PrefetchRules.CurrentState(index: $0.index, hasFirstFrame: $0.first != nil,
                                       jobQueued: $0.job.map { !$0.running } ?? false,
                                       jobRunning: $0.job?.running ?? false)
        }
        let queued = slots.values.compactMap { s -> PrefetchRules.Queued? in
            guard let job = s.job, !job.running else { return nil }
            return PrefetchRules.Queued(index: s.index, priority: s.wanted?.priority ?? 0)
        }
        if !queued.isEmpty {
            for (index, lane) in rules.jobsToStart(current: currentState, queued: queued, laneBusy: laneBusy) {
                guard let next = slots[index], let job = next.job, let wanted = next.wanted else { continue }
                job.running = true
                job.lane = lane
                laneBusy[lane] = true
                tally.jobsStarted += 1
                emit(.started(index: next.index, target: wanted.stage))
                start(next, job: job, target: wanted.stage, lane: lane)
            }
        }
        if isIdle, !idleWaiters.isEmpty {
            let waiters = idleWaiters
            idleWaiters = []
            for w in waiters { w() }
        }
    }

    private func start(_ s: Slot, job: Job, target: PrefetchStage, lane: Int) {
        let index = s.index
        let handle = s.handle
        s.handle = nil
        let preparer = self.preparer
        let work = PrefetchJob<Frame>(
            index: index, target: target, startStage: s.stage, hasFirstFrame: s.first != nil,
            bufferedSeconds: s.bufferedSeconds, token: job.token, duration: { preparer.duration(of: $0) },
            deliver: { [unowned self] frame in self.control.async { self.deliver(frame, to: index, job: job) } },
            reached: { [unowned self] stage in self.control.async { self.reach(stage, index: index, job: job) } })
        job.work = work
        lanes[lane].async { [self] in
            let result: Result<Preparer.Handle?, any Error>
            if job.token.isCancelled {
                result = .failure(CancellationError())
            } else {
                result = Result { try preparer.prepare(work, from: handle) }
            }
            control.async { self.finish(index: index, job: job, result: result) }
        }
    }

    private func reach(_ stage: PrefetchStage, index: Int, job: Job) {
        guard let s = slots[index], s.job === job, s.wanted != nil else { return }
        if s.stage == nil || stage > s.stage! {
            s.stage = stage
            emit(.reached(index: index, stage: stage))
        }
    }

    private func deliver(_ frame: Frame, to index: Int, job: Job) {
        let bytes = preparer.byteCount(of: frame)
        guard let s = slots[index], s.job === job, s.wanted != nil, needsWork(s) else {
            tally.framesDropped += 1
            dispose(frame)
            return
        }
        if !rules.fits(bytes, held: tally.decodedBytes) { evict(toFit: bytes, for: s, incomingIsFirst: s.first == nil) }
        guard rules.fits(bytes, held: tally.decodedBytes) else {
            tally.framesDropped += 1
            s.starved = true
            job.work?.stop()
            dispose(frame)
            return
        }
        tally.decodedBytes += bytes
        tally.peakDecodedBytes = max(tally.peakDecodedBytes, tally.decodedBytes)
        tally.framesDelivered += 1
        if s.first == nil {
            s.first = frame
            s.firstBytes = bytes
            s.stage = .firstFrame
            emit(.reached(index: index, stage: .firstFrame))
            if index == current { pump() }  // other work was held back for it
        } else {
            s.buffer.append((frame, bytes, preparer.duration(of: frame)))
            if case .buffered(let target)? = s.wanted?.stage, s.bufferedSeconds >= target {
                if s.stage.map({ $0 < .buffered(seconds: target) }) ?? true {
                    s.stage = .buffered(seconds: target)
                    emit(.reached(index: index, stage: .buffered(seconds: target)))
                }
            }
        }
        if !needsWork(s) { job.work?.stop() }
    }

    /// Makes room for an incoming frame by dropping frames worth less than it, in the order of
    /// ``PrefetchRules/evictionOrder(for:incomingIsFirst:current:others:)``: buffered frames (newest first) of the
    /// slots it names, then their first frames, farthest slot first, until the frame fits. A victim is starved (not
    /// refilled until the current item changes) and its running job is cancelled.
    private func evict(toFit bytes: Int, for s: Slot, incomingIsFirst: Bool) {
        func over() -> Bool { !rules.fits(bytes, held: tally.decodedBytes) }
        let order = rules.evictionOrder(for: s.index, incomingIsFirst: incomingIsFirst, current: current,
                                        others: Array(slots.keys))
        var freedBySlot: [Int: (frames: Int, bytes: Int)] = [:]
        func note(_ v: Slot, _ b: Int) {
            let old = freedBySlot[v.index] ?? (0, 0)
            freedBySlot[v.index] = (old.frames + 1, old.bytes + b)
            v.starved = true
            if let job = v.job, job.running { job.token.cancel() }
        }
        for index in order.buffered {
            guard let v = slots[index] else { continue }
            while over(), let last = v.buffer.popLast() {
                tally.decodedBytes -= last.bytes
                note(v, last.bytes)
            }
        }
        for index in order.first {
            guard over(), let v = slots[index], v.first != nil else { continue }
            tally.decodedBytes -= v.firstBytes
            note(v, v.firstBytes)
            v.first = nil
            v.firstBytes = 0
            v.stage = .probed
        }
        for (index, freed) in freedBySlot.sorted(by: { $0.key < $1.key }) {
            tally.framesDropped += freed.frames
            emit(.evicted(index: index, frames: freed.frames, bytes: freed.bytes))
        }
    }

    private func finish(index: Int, job: Job, result: Result<Preparer.Handle?, any Error>) {
        laneBusy[job.lane] = false
        job.work = nil  // the preparer's job refers back to this one through its callbacks: break the cycle
        if let s = slots[index], s.job === job {
            s.job = nil
            switch result {
            case .success(let handle):
                // A cancelled job's handle may have been interrupted mid-read: never reuse it.
                if s.wanted != nil && !job.token.isCancelled { s.handle = handle }
                if !rules.keepsHandle(index, current: current) { releaseHandle(s) }
            case .failure(let error):
                if !job.token.isCancelled, !(error is CancellationError) {
                    s.failure = String(describing: error)
                    tally.failures += 1
                    emit(.failed(index: index, message: s.failure!))
                }
            }
            if s.wanted == nil {
                drop(s, firstToo: true)
                releaseHandle(s)
                slots[index] = nil
            } else {
                schedule(s)
            }
        }
        pump()
    }
}
