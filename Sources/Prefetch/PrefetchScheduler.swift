import Dispatch
import EngineSupport
import Foundation

/// Runs a ``PrefetchPolicy`` against a ``PrefetchPreparer`` on Dispatch, within a memory budget: the live driver of
/// ``PrefetchStateMachine``.
///
/// Every scheduling decision and state change is the state machine's — the same value PolicyLab's virtual-time
/// simulator drives. This class only performs its actions with real things: it starts jobs on its worker lanes,
/// cancels or stops them through their `CancellationToken` and ``PrefetchJob``, holds the frames and decoders the
/// machine accounts for, frees what it drops (off the control queue), and reports events. Each item has at most one job; when an item
/// leaves the wanted set its queued job never runs and its running job is cancelled; decoded bytes never exceed the
/// budget (see ``PrefetchStateMachine/deliver(bytes:duration:to:lane:)``).
///
/// One serial control queue owns the machine, the frames, the decoders and the jobs; `@unchecked Sendable` is safe
/// because all mutable state is only touched on `control` (the public methods hop onto it), except the `board`, which
/// has its own lock. Work runs on `workers` background lanes plus one kept for the item on screen.
public final class PrefetchScheduler<Preparer: PrefetchPreparer>: @unchecked Sendable {
    public typealias Frame = Preparer.Frame

    /// The engine doing the work.
    public let preparer: Preparer
    /// Maximum decoded bytes held across slots.
    public let budget: Int
    /// Number of background worker lanes.
    public let workerCount: Int
    /// Open decoders (preparer handles) are kept only for items at most this far from the current one; farther
    /// items keep their frames but release their decoder, which holds far more memory than one frame.
    public let keepHandlesWithin: Int

    /// Where the machine and everything below marked "confined to `control`" live: a dedicated thread, so that a
    /// swipe can queue its update without the woken thread preempting the swiping one
    /// (``ThreadLane/asyncWithoutPreempting(_:)``).
    private let control = ThreadLane(name: "videofeed.prefetch.control", nice: 0)
    /// Dropped frames and closed decoders are freed here, off the control queue and a little later, so that neither
    /// a swipe nor the decode of the item on screen competes with returning memory to the system.
    private let reclaim = DispatchQueue(label: "videofeed.prefetch.reclaim")
    private let reclaiming = DispatchGroup()
    private let lanes: [ThreadLane]
    /// Notified after each event's actions (a first frame or failure published, a frame buffered or taken, a job
    /// started or ended): what waits for a frame waits on it.
    package let changes = ChangeSignal()

    // Confined to `control`.
    private var machine: PrefetchStateMachine
    /// The frames the machine accounts for, per item: the first frame and the buffered ones, oldest first.
    private var frames: [Int: (first: Frame?, buffer: [Frame])] = [:]
    /// Decoders kept between jobs.
    private var handles: [Int: Preparer.Handle] = [:]
    /// The job running on each lane.
    private var jobs: [Job?]
    private var idleWaiters: [@Sendable () -> Void] = []
    private var eventHandler: (@Sendable (PrefetchEvent) -> Void)?
    private var traceHandler: (@Sendable (PrefetchStateMachine.Action) -> Void)?

    /// What a swipe needs to know about an item, readable without waiting for the control queue.
    private struct Shown {
        var first: Frame?
        var failure: String?
    }

    /// Each wanted slot's first frame and failure, copied here (on the control queue) whenever they change, so that
    /// ``swipe(to:history:now:)`` answers from this board under its own short lock while the control queue may be
    /// busy. Entries go when their slot is released.
    private let board = Locked<[Int: Shown]>([:])

    /// One running job's cancellation and its preparer-side handle. `work` is only touched on the control queue;
    /// `token` is itself thread-safe.
    private final class Job: @unchecked Sendable {
        let token = CancellationToken()
        var work: PrefetchJob<Frame>?
    }

    /// - Parameters:
    ///   - preparer: does the work.
    ///   - policy: decides the wanted set.
    ///   - feedLength: number of items (update with ``setFeed(length:wraps:)``).
    ///   - wraps: whether the feed wraps around.
    ///   - workers: concurrent background jobs (default: active cores).
    ///   - budget: maximum decoded bytes held across slots.
    ///   - keepHandlesWithin: keep open decoders for items at most this far from the current one (default 1).
    ///   - loopHold: the largest first pass an item may keep to loop from (nil: ``PrefetchRules/LoopHold/standard(budget:)``).
    public init(preparer: Preparer, policy: any PrefetchPolicy, feedLength: Int, wraps: Bool = false,
                workers: Int = ProcessInfo.processInfo.activeProcessorCount, budget: Int, keepHandlesWithin: Int = 1,
                loopHold: PrefetchRules.LoopHold? = nil) {
        self.keepHandlesWithin = keepHandlesWithin
        self.preparer = preparer
        self.workerCount = max(1, workers)
        self.budget = budget
        let rules = PrefetchRules(workers: workers, budget: budget, keepHandlesWithin: keepHandlesWithin,
                                  feedLength: feedLength, wraps: wraps, loopHold: loopHold)
        self.machine = PrefetchStateMachine(policy: policy, rules: rules)
        // One more lane than workers, kept for the item on screen; the nice levels are the rules' (PolicyLab shares
        // its virtual cores by the same levels).
        self.lanes = (0...rules.workers).map {
            ThreadLane(name: "videofeed.prefetch.worker\($0)", nice: rules.nice(ofLane: $0))
        }
        self.jobs = Array(repeating: nil, count: rules.workers + 1)
    }

    deinit {
        for lane in lanes { lane.stop() }
        control.stop()
    }

    /// The policy in use.
    public var policy: any PrefetchPolicy { control.sync { machine.policy } }

    /// Receives every ``PrefetchEvent``, on the control queue: return quickly.
    public func setEventHandler(_ handler: (@Sendable (PrefetchEvent) -> Void)?) {
        control.sync { eventHandler = handler }
    }

    /// Receives every action of the state machine as it is performed, on the control queue (a trace for tests and
    /// debugging: the same actions PolicyLab's simulator performs for the same events).
    public func setTraceHandler(_ handler: (@Sendable (PrefetchStateMachine.Action) -> Void)?) {
        control.sync { traceHandler = handler }
    }

    /// Sets the number of items and whether the feed wraps (a feed that grew by paging); takes effect at the next
    /// update, which keeps every slot still wanted as it is.
    public func setFeed(length: Int, wraps: Bool) { control.sync { machine.setFeed(length: length, wraps: wraps) } }

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
        control.asyncWithoutPreempting { self.apply(current: current, history: history, now: now) }
        return (shown?.first, shown?.failure)
    }

    /// Item `index`'s first frame and failure as the control queue last published them (both nil when the item is
    /// not in the wanted set or has neither yet), without waiting for that queue.
    public func published(_ index: Int) -> (first: Frame?, failure: String?) {
        let shown = board.withLock { $0[index] }
        return (shown?.first, shown?.failure)
    }

    /// A copy of item `index`'s state (nil when the item is not in the wanted set).
    public func snapshot(_ index: Int) -> SlotSnapshot<Frame>? {
        control.sync {
            guard let s = machine.slot(index) else { return nil }
            return SlotSnapshot(index: index, stage: s.stage, firstFrame: frames[index]?.first,
                                bufferedFrames: s.bufferedFrames, bufferedSeconds: s.bufferedSeconds,
                                failure: machine.failure(of: index), busy: s.job != .none)
        }
    }

    /// Indexes currently held (the wanted set plus slots whose cancelled job has not yet returned).
    public var slotIndexes: [Int] { control.sync { machine.slots.map(\.index).sorted() } }

    /// The counters, with exact byte accounting.
    public var counters: PrefetchCounters { control.sync { machine.counters } }

    /// Takes the next buffered frame of item `index` (after its first frame) for playback, releasing its bytes and
    /// queueing a top-up of the buffer. Nil when none is buffered yet.
    public func takeBufferedFrame(_ index: Int) -> Frame? {
        control.sync {
            guard machine.takeBufferedFrame(index) else { return nil }
            let frame = frames[index]?.buffer.isEmpty == false ? frames[index]!.buffer.removeFirst() : nil
            forgetIfEmpty(index)
            performActions()
            return frame
        }
    }

    /// Runs `body` (on the control queue) once no job is queued or running.
    public func whenIdle(_ body: @escaping @Sendable () -> Void) {
        control.async {
            if self.machine.isIdle { body() } else { self.idleWaiters.append(body) }
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

    /// Cancels every job and releases every slot. Safe to call from any thread, the control queue included (an
    /// owner's deinit may run on whichever thread dropped the last reference).
    public func shutdown() {
        control.sync {
            machine.shutdown()
            performActions(publish: true)
        }
    }

    // MARK: - Control queue only

    @discardableResult
    private func apply(current: Int, history: [Swipe], now: Double) -> [PrefetchRequest] {
        let wanted = machine.apply(current: current, history: history, now: now)
        performActions(publish: true)
        // Start work after this call returns: a swipe's caller gets its answer before any worker wakes up.
        control.async {
            self.machine.pump()
            self.performActions()
        }
        return wanted
    }

    /// Performs the actions of the machine's last event (once per event); republishes the board when a first frame or failure may have
    /// changed, then reports the events (a listener that reads the board finds what the event tells); runs the idle
    /// waiters once nothing is queued or running.
    private func performActions(publish: Bool = false) {
        var publish = publish
        for action in machine.actions {
            traceHandler?(action)
            switch action {
            case .start(let order):
                start(order)
            case .cancel(let lane):
                jobs[lane]?.token.cancel()
            case .stop(let lane):
                jobs[lane]?.work?.stop()
            case .dropFirst(let index):
                if let first = frames[index]?.first {
                    frames[index]!.first = nil
                    dispose(first)
                    forgetIfEmpty(index)
                }
                publish = true
            case .dropBuffered(let index, let count):
                guard let held = frames[index]?.buffer, !held.isEmpty else { break }
                let n = min(count, held.count)
                frames[index]!.buffer.removeLast(n)
                dispose(Array(held.suffix(n)))
                forgetIfEmpty(index)
            case .releaseHandle(let index):
                // An open decoder holds tens of megabytes outside the budget: close it at once (still off this queue).
                if let handle = handles.removeValue(forKey: index) { dispose(handle, after: 0) }
            }
        }
        if publish { publishBoard() }
        // Events last, once the board shows what they tell.
        if let eventHandler { for event in machine.events { eventHandler(event) } }
        if machine.isIdle, !idleWaiters.isEmpty {
            let waiters = idleWaiters
            idleWaiters = []
            for w in waiters { w() }
        }
        changes.notify()
    }

    /// Drops item `index`'s entry from `frames` once it holds nothing.
    private func forgetIfEmpty(_ index: Int) {
        if let held = frames[index], held.first == nil, held.buffer.isEmpty { frames[index] = nil }
    }

    /// Copies each wanted slot's first frame and failure to the board.
    private func publishBoard() {
        var shown: [Int: Shown] = [:]
        for s in machine.slots where s.wanted != nil {
            let first = frames[s.index]?.first
            let failure = machine.failure(of: s.index)
            if first != nil || failure != nil { shown[s.index] = Shown(first: first, failure: failure) }
        }
        board.withLock { $0 = shown }
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

    private func start(_ order: PrefetchStateMachine.JobOrder) {
        let job = Job()
        let lane = order.lane, index = order.index
        jobs[lane] = job
        let handle = handles.removeValue(forKey: index)
        let preparer = self.preparer
        let work = PrefetchJob<Frame>(
            index: index, target: order.target, startStage: order.startStage, hasFirstFrame: order.hasFirstFrame,
            bufferedSeconds: order.bufferedSeconds, heldFrames: order.heldFrames, token: job.token,
            duration: { preparer.duration(of: $0) },
            deliver: { [unowned self] frame in self.control.async { self.deliver(frame, to: index, lane: lane) } },
            reached: { [unowned self] stage in
                self.control.async {
                    self.machine.reach(stage, index: index, lane: lane)
                    self.performActions()
                }
            },
            // A short wait on the control queue, which never waits for a worker (and a swipe never waits for it).
            admit: { [unowned self] bytes in
                self.control.sync {
                    let answer = self.machine.admit(bytes: bytes, to: index, lane: lane)
                    self.performActions()
                    return answer
                }
            },
            holdLoop: { [unowned self] frames, bytes in
                self.control.sync {
                    let answer = self.machine.holdLoop(frames: frames, bytes: bytes, to: index, lane: lane)
                    self.performActions()
                    return answer
                }
            })
        job.work = work
        lanes[lane].async { [self] in
            let result: Result<Preparer.Handle?, any Error>
            if job.token.isCancelled {
                result = .failure(CancellationError())
            } else {
                result = Result { try preparer.prepare(work, from: handle) }
            }
            control.async { self.finish(lane: lane, job: job, result: result) }
        }
    }

    private func deliver(_ frame: Frame, to index: Int, lane: Int) {
        let outcome = machine.deliver(bytes: preparer.byteCount(of: frame), duration: preparer.duration(of: frame),
                                      to: index, lane: lane)
        switch outcome {
        case .rejected:
            dispose(frame)
        case .first:
            frames[index, default: (nil, [])].first = frame
        case .buffered:
            frames[index, default: (nil, [])].buffer.append(frame)
        }
        performActions(publish: outcome == .first)
    }

    private func finish(lane: Int, job: Job, result: Result<Preparer.Handle?, any Error>) {
        job.work = nil  // the preparer's job refers back to this scheduler through its callbacks: break the cycle
        if jobs[lane] === job { jobs[lane] = nil }
        let index = machine.jobIndex(onLane: lane)
        let machineResult: PrefetchStateMachine.JobResult
        var returned: Preparer.Handle?
        switch result {
        case .success(let handle):
            returned = handle
            machineResult = .completed(handle: handle != nil)
        case .failure(let error):
            machineResult = error is CancellationError ? .cancelled : .failed(String(describing: error))
        }
        let keep = machine.finish(lane: lane, result: machineResult)
        if let handle = returned {
            // A cancelled job's decoder may have been interrupted mid-read: never reused, closed off this queue.
            if keep, let index { handles[index] = handle } else { dispose(handle, after: 0) }
        }
        performActions(publish: true)
    }
}
