/// The prefetch scheduler's whole state and every change to it: one value type, events in, actions out.
///
/// Each `mutating` event — the viewer moved (``apply(current:history:now:)``), work may start (``pump()``), a job
/// reached a stage (``reach(_:index:lane:)``), asks for room for its next frame (``admit(bytes:to:lane:)``),
/// delivered a frame (``deliver(bytes:duration:to:lane:)``), returned
/// (``finish(lane:result:)``), playback took a frame (``takeBufferedFrame(_:)``), everything stops (``shutdown()``) —
/// updates the slots, jobs, lanes and counters and appends to ``actions`` what its driver must now do — start a job on
/// a lane, cancel or stop one, free frames or a decoder — and to ``events`` what it reports. The machine holds no frames, decoders or
/// threads, only their bookkeeping (sizes, durations, which lane runs what), so one machine serves two drivers:
/// ``PrefetchScheduler`` runs it on a Dispatch control queue with real frames and FFmpeg decoders, PolicyLab's
/// simulation engine runs it in virtual time with jobs charged from a cost model. Neither driver makes a scheduling
/// decision of its own; the decisions themselves are ``PrefetchRules``' (swift-nio's handler state machines, such
/// as `NIOAsyncWriter.StateMachine`, are the model).
///
/// A driver calls an event, then performs its ``actions`` and reports its ``events``: each event starts by forgetting
/// the last one's.
///
/// Invariants: an item has at most one job; a job is queued (``JobState/queued``) or runs on one lane, and a lane runs
/// at most one job; ``PrefetchCounters/decodedBytes`` is the sum of every slot's first frame, buffered frames,
/// admitted-but-undelivered bytes (``Slot/reservedBytes``) and held first pass (``Slot/loopBytes``) and never exceeds ``PrefetchRules/budget`` after an
/// admission or a delivery; a slot's held frames are its first frames in order, and a kept decoder sits right after
/// them; a slot stays while it is wanted or its cancelled job has
/// not returned.
public struct PrefetchStateMachine: Sendable {
    /// What the driver must do after an event, in order.
    public enum Action: Sendable, Equatable, CustomStringConvertible {
        /// Start a job for `order.index` on `order.lane`, handing it the item's kept decoder if the driver holds one.
        case start(JobOrder)
        /// Cancel the job running on `lane`: its item left the wanted set, or the budget evicted its frames. Its
        /// decoder is not kept.
        case cancel(lane: Int)
        /// Ask the job running on `lane` to stop at its next frame: it has done enough (its decoder is kept).
        case stop(lane: Int)
        /// Free item `index`'s first frame.
        case dropFirst(index: Int)
        /// Free item `index`'s newest `count` buffered frames.
        case dropBuffered(index: Int, count: Int)
        /// Close item `index`'s kept decoder.
        case releaseHandle(index: Int)

        /// `start #3 firstFrame lane 2`, `cancel lane 0`, …
        public var description: String {
            switch self {
            case .start(let o): "start #\(o.index) \(o.target) lane \(o.lane)"
            case .cancel(let lane): "cancel lane \(lane)"
            case .stop(let lane): "stop lane \(lane)"
            case .dropFirst(let index): "dropFirst #\(index)"
            case .dropBuffered(let index, let count): "dropBuffered #\(index) ×\(count)"
            case .releaseHandle(let index): "releaseHandle #\(index)"
            }
        }
    }

    /// A job to start: which item, on which lane, towards which stage, and what the item already holds.
    public struct JobOrder: Sendable, Hashable {
        /// The item.
        public var index: Int
        /// The lane it runs on (``PrefetchRules/urgentLane`` for the item on screen).
        public var lane: Int
        /// The stage wanted.
        public var target: PrefetchStage
        /// The stage the item had reached, if any.
        public var startStage: PrefetchStage?
        /// Whether the item holds its first frame.
        public var hasFirstFrame: Bool
        /// Seconds of buffered frames the item holds.
        public var bufferedSeconds: Double
        /// Frames the item holds (its first frame and the buffered ones). They are its first frames in order, so a
        /// job that starts without a kept decoder decodes this many again before it delivers anything new.
        public var heldFrames: Int
    }

    /// The answer to a job asking for room for its next frame (``PrefetchStateMachine/admit(bytes:to:lane:)``).
    public enum Admission: Sendable, Hashable {
        /// Decode it: the bytes are reserved in the budget.
        case go
        /// No room now: return with the decoder at the undecoded frame. The slot waits for room and is queued
        /// again when playback takes a frame (the item on screen) or memory is released.
        case pause
        /// The item needs no more frames (target reached, lowered, cancelled): return.
        case stop
    }

    /// How a job ended, as its driver saw it.
    public enum JobResult: Sendable, Hashable {
        /// The job returned; `handle` tells whether it handed back a decoder to keep.
        case completed(handle: Bool)
        /// The job threw: the item failed with this message (ignored when the machine had cancelled the job).
        case failed(String)
        /// The job saw its cancellation and returned without a result.
        case cancelled
    }

    /// What became of a delivered frame.
    public enum Delivery: Sendable, Hashable {
        /// Not kept (the item no longer needs it, or it does not fit the budget): the driver frees it.
        case rejected
        /// Kept as the item's first frame.
        case first
        /// Kept as the item's newest buffered frame.
        case buffered
    }

    /// A job's state within its slot.
    public enum JobState: Sendable, Hashable {
        /// No job.
        case none
        /// Waiting for a lane.
        case queued
        /// Running on `lane`.
        case running(lane: Int)
    }

    /// One buffered frame's size and duration.
    public struct BufferedFrame: Sendable, Hashable {
        /// Bytes counted against the budget.
        public var bytes: Int
        /// Seconds.
        public var duration: Double
        /// A frame of `bytes` lasting `duration` seconds.
        public init(bytes: Int, duration: Double) {
            self.bytes = bytes
            self.duration = duration
        }
    }

    /// A slot's buffered frames once their durations or sizes differ (equal frames are only counted, in the slot):
    /// runs of equal frames, oldest first, and `sums[k]`, the seconds of the oldest `k` frames summed oldest first, so
    /// dropping the newest frames costs nothing and taking the oldest one sums the rest again. Back to a count in the
    /// slot once one run is left.
    struct BufferedFrames: Sendable {
        /// Runs of equal frames, oldest first.
        var runs: [(frame: BufferedFrame, count: Int)] = []
        var sums: [Double] = [0]

        /// Seconds of all the frames, summed oldest first.
        var seconds: Double { sums[sums.count - 1] }
        /// The frames, oldest first.
        var frames: [BufferedFrame] { runs.flatMap { repeatElement($0.frame, count: $0.count) } }
        /// The frames' durations, oldest first.
        var durations: [Double] { frames.map(\.duration) }
        /// The frame, when every frame held is the same one (one run).
        var onlyFrame: BufferedFrame? { runs.count == 1 ? runs[0].frame : nil }

        mutating func append(_ frame: BufferedFrame) {
            if let last = runs.last, last.frame == frame {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((frame, 1))
            }
            sums.append(sums[sums.count - 1] + frame.duration)
        }

        /// Removes and returns the oldest frame (there is one).
        mutating func removeFirst() -> BufferedFrame {
            let taken = runs[0].frame
            runs[0].count -= 1
            if runs[0].count == 0 { runs.removeFirst() }
            sums.removeAll(keepingCapacity: true)
            sums.append(0)
            for run in runs {
                for _ in 0..<run.count { sums.append(sums[sums.count - 1] + run.frame.duration) }
            }
            return taken
        }

        /// Removes and returns the newest frame (there is one).
        mutating func popLast() -> BufferedFrame {
            let last = runs[runs.count - 1].frame
            runs[runs.count - 1].count -= 1
            if runs[runs.count - 1].count == 0 { runs.removeLast() }
            sums.removeLast()
            return last
        }
    }

    /// One item's state.
    public struct Slot: Sendable {
        /// The item.
        public let index: Int
        /// Its request in the wanted set; nil once released (a slot stays until its cancelled job returns).
        public internal(set) var wanted: PrefetchRequest?
        /// The furthest stage reached.
        public internal(set) var stage: PrefetchStage?
        /// Whether the first frame is held, and its bytes.
        public internal(set) var hasFirstFrame = false
        public internal(set) var firstBytes = 0
        /// Frames held after the first one (``PrefetchStateMachine/bufferedFrames(at:)`` lists their sizes and
        /// durations).
        public internal(set) var bufferedFrames = 0
        /// While every buffered frame is the same (every frame of one stream, in practice): that frame. Nil when the
        /// buffer is empty or mixed (then the machine keeps the frames in runs).
        public internal(set) var uniformFrame: BufferedFrame?
        /// Where the seconds of `k` such frames are in the machine's sums table (`sumValues[sumsStart + k]` for
        /// `k < sumsLimit`).
        var sumsStart = 0
        var sumsLimit = 0
        /// Their seconds, summed oldest first.
        public internal(set) var bufferedSeconds = 0.0
        /// Whether the driver keeps an open decoder for the item between jobs.
        public internal(set) var hasHandle = false
        /// The item's job.
        public internal(set) var job = JobState.none
        /// Set when the budget evicted this slot's frames: not refilled until the current item changes.
        public internal(set) var starved = false
        /// Whether the item failed (``PrefetchStateMachine/failure(of:)`` says why); a failed item gets no more work.
        public internal(set) var failed = false
        /// Set when its job was told to pause for lack of room: not queued again until room may have been made.
        public internal(set) var waitingForRoom = false
        /// Bytes admitted for frames its job is decoding and has not delivered yet (counted in the budget).
        public internal(set) var reservedBytes = 0
        /// Set when a job returned no decoder to keep: none is asked for again.
        public internal(set) var decoderless = false
        /// Bytes of the item's whole first pass that its handle keeps to loop from
        /// (``PrefetchStateMachine/holdLoop(frames:bytes:to:lane:)``), counted in the budget until the handle goes.
        public internal(set) var loopBytes = 0
        /// Set when frames its decoder had passed were dropped unshown: the decoder must not be kept, the next job
        /// starts afresh.
        var restart = false

        init(index: Int) { self.index = index }

        /// Whether the slot still needs work for its wanted stage (``PrefetchRules/needsWork``).
        @inlinable
        public var needsWork: Bool {
            PrefetchRules.needsWork(wanted: wanted?.stage, reached: stage, hasFirstFrame: hasFirstFrame,
                                    bufferedSeconds: bufferedSeconds, failed: failed, starved: starved,
                                    waitingForRoom: waitingForRoom)
        }

        /// The lane of the slot's running job, if one runs.
        public var runningLane: Int? {
            if case .running(let lane) = job { return lane }
            return nil
        }
    }

    /// The job running on a lane.
    struct LaneJob {
        var index: Int
        var cancelled = false
        /// Stopped so that the item on screen moves to its own lane.
        var moving = false
        /// Where the job's slot was when `positionVersion` was the slots' version (a cache of ``position(of:)``).
        var position = -1
        var positionVersion = -1
    }

    /// Decides the wanted set.
    public let policy: any PrefetchPolicy
    /// The decisions (lanes, budget, distances).
    public private(set) var rules: PrefetchRules
    /// The item on screen.
    public private(set) var current = 0
    /// Counters of the work, with exact byte accounting.
    public private(set) var counters = PrefetchCounters()
    /// Whether ``events`` are recorded (the simulator, which has no listener, turns them off; nothing else changes).
    public var reportsEvents: Bool
    /// What the driver must do after the last event, in order. (Plain values: forgetting them frees nothing.)
    public private(set) var actions: [Action] = []
    /// What the last event reports, in order: to report once its actions are performed.
    public private(set) var events: [PrefetchEvent] = []

    /// The slots: a handful (the wanted set plus slots whose cancelled job has not returned), so a linear scan of
    /// two small arrays beats hashing on the simulator's hot path.
    @usableFromInline
    var slotKeys: [Int] = []
    /// Every slot, in the order they were added (a slot's place here is its ``position(of:)``, valid until a slot is
    /// removed).
    public private(set) var slots: [Slot] = []
    /// Each slot's buffered frames while they are mixed, at the slot's position (kept apart so that a slot is a plain
    /// value, copied without reference counting on the simulator's hot path; equal frames are only counted, in the
    /// slot).
    var buffers: [BufferedFrames] = []
    /// Per frame duration `sumDurations[t]`: `sumValues[sumStarts[t] + k]` is the seconds of `k` such frames summed
    /// one at a time, for `k < sumLimits[t]` (see `uniformSeconds`).
    private var sumDurations: [Double] = []
    private var sumStarts: [Int] = []
    private var sumLimits: [Int] = []
    private var sumValues: [Double] = []
    /// Why items failed, while their slots last.
    private var failures: [Int: String] = [:]
    /// Changes whenever a slot is added or removed (the eviction memo checks it).
    var slotsVersion = 0
    var lanes: [LaneJob?]
    var laneBusy: [Bool]
    /// Jobs queued in slots and running on lanes (so `pump` sees at once when nothing can start).
    public private(set) var queuedJobs = 0
    public private(set) var runningJobs = 0
    private var queuedScratch: [PrefetchRules.Queued] = []
    /// The last eviction order asked for, as slot positions (valid while `slotsVersion` is the same).
    private var evictionKey: EvictionKey?
    private var evictionBuffered: [Int] = []
    private var evictionFirst: [Int] = []
    /// ``currentPosition()``'s memory.
    private var currentCache = (index: -1, position: -1, version: -1)

    /// A machine with no slots, the current item 0.
    public init(policy: any PrefetchPolicy, rules: PrefetchRules, reportsEvents: Bool = true) {
        self.policy = policy
        self.rules = rules
        self.reportsEvents = reportsEvents
        lanes = Array(repeating: nil, count: rules.workers + 1)
        laneBusy = Array(repeating: false, count: rules.workers + 1)
    }

    // MARK: - Reading

    /// Item `index`'s slot, if it has one.
    @inlinable
    public func slot(_ index: Int) -> Slot? { position(of: index).map { slots[$0] } }

    /// The buffered frames of the slot at `position`, oldest first.
    public func bufferedFrames(at position: Int) -> [BufferedFrame] {
        if let same = slots[position].uniformFrame {
            return Array(repeating: same, count: slots[position].bufferedFrames)
        }
        return buffers[position].frames
    }

    /// Why item `index` failed, while its slot lasts.
    public func failure(of index: Int) -> String? { failures[index] }

    /// Whether the slot at `position` needs a job: frames for its wanted stage (``needsFrames(at:)``), or a decoder
    /// positioned after the frames it holds (``needsDecoder(at:)``).
    @inlinable @inline(__always)
    public func needsWork(at position: Int) -> Bool { needsFrames(at: position) || needsDecoder(at: position) }

    /// Whether the slot at `position` still needs frames for its wanted stage (``PrefetchRules/needsWork``), read
    /// in place.
    @inlinable @inline(__always)
    public func needsFrames(at position: Int) -> Bool {
        PrefetchRules.needsWork(wanted: slots[position].wanted?.stage, reached: slots[position].stage,
                                hasFirstFrame: slots[position].hasFirstFrame,
                                bufferedSeconds: slots[position].bufferedSeconds,
                                failed: slots[position].failed, starved: slots[position].starved,
                                waitingForRoom: slots[position].waitingForRoom)
    }

    /// Whether the slot at `position` holds frames but no decoder, and is near enough the current item to keep one
    /// (``PrefetchRules/keepsHandle(_:current:)``): a job opens one and decodes the held frames again, unshown, so
    /// that the item goes on from its last frame the moment it becomes current instead of paying for that then. (An
    /// item whose first frame was decoded farther away, where decoders are not kept, reaches ±1 this way.)
    @inlinable @inline(__always)
    public func needsDecoder(at position: Int) -> Bool {
        let slot = slots[position]
        // (A slot starved of frames by the budget may still get one: decoding the held frames again takes no room.)
        guard slot.hasFirstFrame, !slot.hasHandle, slot.job == .none, !slot.failed, !slot.decoderless,
              let wanted = slot.wanted, wanted.stage >= .firstFrame else { return false }
        return rules.keepsHandle(slot.index, current: current)
    }

    /// Whether no job is queued or running.
    @inlinable
    public var isIdle: Bool { queuedJobs == 0 && runningJobs == 0 }

    /// The item of the job running on `lane`, if one runs.
    public func jobIndex(onLane lane: Int) -> Int? { lanes[lane]?.index }

    /// Forgets the actions and events of the last event (each event does this first, so a driver need not).
    public mutating func clearActions() { beginEvent() }

    /// Starts an event: the last one's actions and events are forgotten, keeping their storage.
    @inline(__always)
    private mutating func beginEvent() {
        // Most events leave one action or none: removing it is cheaper than the general removal.
        switch actions.count {
        case 0: break
        case 1: actions.removeLast()
        default: actions.removeAll(keepingCapacity: true)
        }
        if !events.isEmpty { events.removeAll(keepingCapacity: true) }
    }

    // MARK: - Events

    /// Sets the number of items and whether the feed wraps (a feed that grew by paging, and wraps once its end is
    /// known). Takes effect at the next ``apply(current:history:now:)``; slots already held are not disturbed.
    public mutating func setFeed(length: Int, wraps: Bool) {
        rules.feedLength = length
        rules.wraps = wraps
    }

    /// The viewer is on `current`: cancels and releases what left the policy's wanted set, queues or retargets the
    /// rest. Starts nothing (call ``pump()`` after: a swipe's caller gets its answer before any worker wakes up).
    /// Returns the wanted set.
    @discardableResult
    public mutating func apply(current newCurrent: Int, history: [Swipe], now: Double) -> [PrefetchRequest] {
        beginEvent()
        let changed = newCurrent != current
        let previous = current
        current = newCurrent
        let context = PrefetchContext(current: current, feedLength: rules.feedLength, wraps: rules.wraps,
                                      history: history, now: now)
        let wanted = policy.wanted(in: context)
        for index in slotKeys.sorted() where !wanted.contains(where: { $0.index == index }) { release(index) }
        // The item left behind keeps its first frame but not the frames after the point its playback reached: if it
        // becomes current again it plays from its start.
        if changed, let p = position(of: previous), slots[p].wanted != nil, slots[p].bufferedFrames > 0 {
            drop(p, firstToo: false)
        }
        for request in wanted {
            let p = position(of: request.index) ?? add(Slot(index: request.index))
            slots[p].wanted = request
            if changed {
                slots[p].starved = false
                // Memory was released or the priorities changed: whoever waited for room asks again.
                slots[p].waitingForRoom = false
            }
            if !rules.keepsHandle(request.index, current: current) { releaseHandle(p) }
            trimToTarget(p)
            schedule(p)
        }
        return wanted
    }

    /// Starts queued jobs on free lanes as ``PrefetchRules/jobsToStart(current:queued:laneBusy:)`` decides.
    public mutating func pump() {
        beginEvent()
        pumpJobs()
    }

    private mutating func pumpJobs() {
        moveCurrentToItsLane()
        guard queuedJobs > 0, runningJobs < lanes.count else { return }
        queuedScratch.removeAll(keepingCapacity: true)
        for i in slots.indices where slots[i].job == .queued {
            let kind: PrefetchRules.Queued.Kind = !slots[i].hasFirstFrame ? .firstFrame
                : needsFrames(at: i) ? .frames : .decoder
            queuedScratch.append(.init(index: slots[i].index, priority: slots[i].wanted?.priority ?? 0, kind: kind))
        }
        var currentState: PrefetchRules.CurrentState?
        if let p = position(of: current) {
            let job = slots[p].job
            let dry = PrefetchRules.runsDry(wanted: slots[p].wanted?.stage, hasFirstFrame: slots[p].hasFirstFrame,
                                            bufferedSeconds: slots[p].bufferedSeconds)
            currentState = PrefetchRules.CurrentState(index: current, hasFirstFrame: slots[p].hasFirstFrame,
                                                      jobQueued: job == .queued,
                                                      jobRunning: job != .none && job != .queued,
                                                      runningDry: dry && !slots[p].waitingForRoom)
        }
        for (index, lane) in rules.jobsToStart(current: currentState, queued: queuedScratch, laneBusy: laneBusy) {
            guard let p = position(of: index), slots[p].job == .queued, let wanted = slots[p].wanted else {
                continue
            }
            slots[p].job = .running(lane: lane)
            queuedJobs -= 1
            lanes[lane] = LaneJob(index: index)
            laneBusy[lane] = true
            runningJobs += 1
            counters.jobsStarted += 1
            slots[p].hasHandle = false  // the job takes it
            slots[p].restart = false
            if reportsEvents { events.append(.started(index: index, target: wanted.stage)) }
            actions.append(.start(JobOrder(index: index, lane: lane, target: wanted.stage,
                                           startStage: slots[p].stage,
                                           hasFirstFrame: slots[p].hasFirstFrame,
                                           bufferedSeconds: slots[p].bufferedSeconds,
                                           heldFrames: (slots[p].hasFirstFrame ? 1 : 0) + slots[p].bufferedFrames)))
        }
    }

    /// The item on screen runs on a background lane (it started there as a neighbour, or while its own lane was
    /// busy) and its own lane is free: its job stops at its next frame and goes on, with its decoder, on that lane,
    /// so that it never shares a background lane's low priority with the neighbours.
    private mutating func moveCurrentToItsLane() {
        guard !laneBusy[rules.urgentLane], let p = currentPosition(), let lane = slots[p].runningLane,
              lane != rules.urgentLane, lanes[lane]?.moving == false, lanes[lane]?.cancelled == false else { return }
        lanes[lane]!.moving = true
        actions.append(.stop(lane: lane))
    }

    /// The job on `lane` reached `stage` without a frame (`.probed`).
    public mutating func reach(_ stage: PrefetchStage, index: Int, lane: Int) {
        beginEvent()
        guard let p = position(of: index, onLane: lane), slots[p].job == .running(lane: lane), slots[p].wanted != nil
        else {
            return
        }
        if let reached = slots[p].stage, stage <= reached { return }
        slots[p].stage = stage
        if reportsEvents { events.append(.reached(index: index, stage: stage)) }
    }

    /// The job on `lane` asks for room for its next frame of item `index`, `bytes` big, before decoding it
    /// (backpressure: a frame is never decoded to be refused, so a slot never skips one).
    ///
    /// The answer is ``Admission/stop`` when the item needs no more frames; ``Admission/go`` when the frame fits the
    /// budget, after evicting frames worth less by the same rule as a delivery, with its bytes reserved until it is
    /// delivered (or the job returns); ``Admission/pause`` otherwise: the slot waits for room. A buffered frame also
    /// leaves room for the first frames still wanted by other items, so a deep buffer never keeps a neighbour from
    /// its first frame — except the next frame of the item on screen when it holds none ahead of its playhead: that
    /// one is worth a first frame, so that playback always goes on, frame by frame if the budget is that small.
    public mutating func admit(bytes: Int, to index: Int, lane: Int) -> Admission {
        beginEvent()
        guard let p = position(of: index, onLane: lane), slots[p].job == .running(lane: lane), slots[p].wanted != nil,
              lanes[lane]?.cancelled == false, needsFrames(at: p) else {
            return .stop
        }
        // Playback of the item on screen must always be able to go on: when it holds no frame ahead of the playhead,
        // its next frame is worth a first frame (it may evict any other slot's frames: all are farther) and keeps
        // no room for others.
        let playheadStarves = index == current && slots[p].bufferedFrames == 0
        let incomingIsFirst = playheadStarves || !slots[p].hasFirstFrame && slots[p].reservedBytes == 0
        var needed = bytes
        if !incomingIsFirst {
            for v in slots.indices where v != p && slots[v].wanted.map({ $0.stage >= .firstFrame }) == true
                && !slots[v].hasFirstFrame && !slots[v].failed && !slots[v].starved {
                needed += bytes
            }
        }
        if !rules.fits(needed, held: counters.decodedBytes) {
            evict(toFit: needed, for: p, incomingIsFirst: incomingIsFirst)
        }
        guard rules.fits(needed, held: counters.decodedBytes) else {
            slots[p].waitingForRoom = true
            counters.admissionsPaused += 1
            return .pause
        }
        slots[p].reservedBytes += bytes
        counters.decodedBytes += bytes
        counters.peakDecodedBytes = max(counters.peakDecodedBytes, counters.decodedBytes)
        return .go
    }

    /// Gives back the bytes admitted for the slot at `p` and not delivered.
    private mutating func releaseReservation(_ p: Int) {
        counters.decodedBytes -= slots[p].reservedBytes
        slots[p].reservedBytes = 0
    }

    /// The job on `lane` has decoded item `index`'s whole first pass, `frames` frames of `bytes` in all, and asks
    /// to keep it in its handle to serve later loops from instead of decoding them again. Yes when the rules'
    /// bound allows it (``PrefetchRules/holdsLoop(frames:bytes:)``) and it fits the budget as it stands, leaving room
    /// for the first frames other wanted items still lack (nothing is evicted for it); its bytes are then counted
    /// until the item's handle is released (the item moves beyond ``PrefetchRules/keepHandlesWithin``, leaves the
    /// wanted set, or its decoder position is forgotten) or not kept when the job returns. No: the job loops by
    /// decoding, as before.
    public mutating func holdLoop(frames: Int, bytes: Int, to index: Int, lane: Int) -> Bool {
        beginEvent()
        guard rules.holdsLoop(frames: frames, bytes: bytes), let p = position(of: index, onLane: lane),
              slots[p].job == .running(lane: lane), slots[p].wanted != nil, lanes[lane]?.cancelled == false,
              !slots[p].restart, slots[p].loopBytes == 0, rules.keepsHandle(index, current: current) else {
            return false
        }
        var needed = bytes
        for v in slots.indices where v != p && slots[v].wanted.map({ $0.stage >= .firstFrame }) == true
            && !slots[v].hasFirstFrame && !slots[v].failed && !slots[v].starved {
            needed += slots[p].firstBytes
        }
        guard rules.fits(needed, held: counters.decodedBytes) else { return false }
        slots[p].loopBytes = bytes
        counters.decodedBytes += bytes
        counters.peakDecodedBytes = max(counters.peakDecodedBytes, counters.decodedBytes)
        counters.loopsHeld += 1
        return true
    }

    /// The slot at `p`'s handle, and the first pass it held, are gone: its bytes leave the budget.
    private mutating func releaseLoop(_ p: Int) {
        counters.decodedBytes -= slots[p].loopBytes
        slots[p].loopBytes = 0
    }

    /// The job on `lane` delivered a decoded frame of item `index`, `bytes` big and `duration` seconds long.
    ///
    /// The frame is kept if the item still needs it and it fits the budget, after evicting frames worth less
    /// (``PrefetchRules/evictionOrder(for:incomingIsFirst:current:others:)``); otherwise it is rejected and the
    /// budget starves the item. A first frame of the item on screen lets held-back work start.
    public mutating func deliver(bytes: Int, duration: Double, to index: Int, lane: Int) -> Delivery {
        beginEvent()
        guard let p = position(of: index, onLane: lane), slots[p].job == .running(lane: lane), slots[p].wanted != nil,
              needsFrames(at: p) else {
            counters.framesDropped += 1
            if let p = position(of: index, onLane: lane), slots[p].job == .running(lane: lane) {
                // The decoder moved past a frame the slot will not hold.
                releaseReservation(p)
                slots[p].restart = true
            }
            return .rejected
        }
        // An admitted frame was counted when it was admitted.
        let admitted = min(slots[p].reservedBytes, bytes)
        slots[p].reservedBytes -= admitted
        let extra = bytes - admitted
        if extra > 0, !rules.fits(extra, held: counters.decodedBytes) {
            evict(toFit: extra, for: p, incomingIsFirst: !slots[p].hasFirstFrame)
        }
        guard rules.fits(extra, held: counters.decodedBytes) else {
            counters.decodedBytes -= admitted
            counters.framesDropped += 1
            slots[p].starved = true
            slots[p].restart = true
            actions.append(.stop(lane: lane))
            return .rejected
        }
        counters.decodedBytes += extra
        counters.peakDecodedBytes = max(counters.peakDecodedBytes, counters.decodedBytes)
        counters.framesDelivered += 1
        let outcome: Delivery
        if !slots[p].hasFirstFrame {
            slots[p].hasFirstFrame = true
            slots[p].firstBytes = bytes
            slots[p].stage = .firstFrame
            if reportsEvents { events.append(.reached(index: index, stage: .firstFrame)) }
            outcome = .first
            if index == current { pumpJobs() }  // other work was held back for it
        } else {
            let wasDry = index == current && PrefetchRules.runsDry(wanted: slots[p].wanted?.stage, hasFirstFrame: true,
                                                                   bufferedSeconds: slots[p].bufferedSeconds)
            appendFrame(BufferedFrame(bytes: bytes, duration: duration), at: p)
            outcome = .buffered
            // Playback of the item on screen is safe again: the work held back for it may start.
            if wasDry, !PrefetchRules.runsDry(wanted: slots[p].wanted?.stage, hasFirstFrame: true,
                                             bufferedSeconds: slots[p].bufferedSeconds) {
                pumpJobs()
            }
            if case .buffered(let target)? = slots[p].wanted?.stage, slots[p].bufferedSeconds >= target,
               slots[p].stage.map({ $0 < .buffered(seconds: target) }) ?? true {
                slots[p].stage = .buffered(seconds: target)
                if reportsEvents { events.append(.reached(index: index, stage: .buffered(seconds: target))) }
            }
        }
        // Nothing above removes a slot, so `p` still holds.
        if !needsFrames(at: p) { actions.append(.stop(lane: lane)) }
        return outcome
    }

    /// The job on `lane` returned. Returns whether the driver keeps the decoder the job handed back (the item is
    /// still wanted, near enough, and the job was not cancelled: an interrupted decoder is never reused).
    public mutating func finish(lane: Int, result: JobResult) -> Bool {
        beginEvent()
        guard let job = lanes[lane] else { return false }
        let position = position(of: job.index, onLane: lane)
        lanes[lane] = nil
        laneBusy[lane] = false
        runningJobs -= 1
        var keep = false
        if let p = position, slots[p].job == .running(lane: lane) {
            slots[p].job = .none
            releaseReservation(p)
            switch result {
            case .completed(let handle):
                keep = handle && slots[p].wanted != nil && !job.cancelled && !slots[p].restart
                    && rules.keepsHandle(job.index, current: current)
                if !handle && !job.cancelled { slots[p].decoderless = true }
                slots[p].hasHandle = keep
            case .failed(let message):
                if !job.cancelled {
                    slots[p].failed = true
                    failures[job.index] = message
                    counters.failures += 1
                    if reportsEvents { events.append(.failed(index: job.index, message: message)) }
                }
            case .cancelled:
                break
            }
            // A handle not kept is freed by the driver, with the first pass it held.
            if !keep { releaseLoop(p) }
            if slots[p].wanted == nil {
                drop(p, firstToo: true)
                releaseHandle(p)
                remove(job.index)
            } else {
                schedule(p)
            }
        }
        pumpJobs()
        return keep
    }

    /// Playback takes the oldest buffered frame of item `index`: its bytes leave the budget and a top-up is queued
    /// and started. Returns false when none is buffered (the driver then has nothing to take).
    public mutating func takeBufferedFrame(_ index: Int) -> Bool {
        beginEvent()
        guard let p = index == current ? currentPosition() : position(of: index), slots[p].bufferedFrames > 0 else {
            return false
        }
        let taken = takeOldestFrame(at: p)
        counters.decodedBytes -= taken.bytes
        // The frame taken made room: the item on screen asks again if it was waiting.
        slots[p].waitingForRoom = false
        schedule(p)
        pumpJobs()
        return true
    }

    /// Counts `periods` periods of steady playback that a driver applied analytically (PolicyLab skips them when
    /// nothing else can happen meanwhile): in each, playback took the current item's oldest buffered frame and a
    /// refill job started, delivered one frame of the same size and duration, and returned. The state after a period
    /// equals the state before, so only the counters move.
    public mutating func countSteadyPlayback(periods: Int) {
        counters.jobsStarted += periods
        counters.framesDelivered += periods
    }

    /// Cancels every job and releases every slot.
    public mutating func shutdown() {
        beginEvent()
        for index in slotKeys.sorted() { release(index) }
        pumpJobs()
    }

    // MARK: - State changes

    /// Queues a job for the slot if it needs one and has none (a request for an item with a job merges into it).
    private mutating func schedule(_ p: Int) {
        if slots[p].job != .none {
            if needsWork(at: p) { counters.merged += 1 }
            return
        }
        guard needsWork(at: p) else { return }
        slots[p].job = .queued
        queuedJobs += 1
    }

    /// Drops what a lowered target no longer needs (the current item became a neighbour, a neighbour moved away).
    private mutating func trimToTarget(_ p: Int) {
        guard let wanted = slots[p].wanted else { return }
        if let lane = slots[p].runningLane, !needsFrames(at: p) { actions.append(.stop(lane: lane)) }
        // The item on screen keeps what playback will take next, whatever its target.
        guard slots[p].index != current else { return }
        switch wanted.stage {
        case .probed: if slots[p].bufferedFrames > 0 || slots[p].hasFirstFrame { drop(p, firstToo: true) }
        case .firstFrame: if slots[p].bufferedFrames > 0 { drop(p, firstToo: false) }
        case .buffered(let seconds):
            guard slots[p].bufferedFrames > 0 else { return }
            let n: Int
            if let same = slots[p].uniformFrame {
                n = PrefetchRules.framesOverTarget(repeatElement(same.duration, count: slots[p].bufferedFrames),
                                                   target: seconds)
            } else {
                n = PrefetchRules.framesOverTarget(buffers[p].durations, target: seconds)
            }
            guard n > 0 else { return }
            for _ in 0..<n { counters.decodedBytes -= popNewestFrame(at: p).bytes }
            counters.framesDropped += n
            actions.append(.dropBuffered(index: slots[p].index, count: n))
            forgetDecoderPosition(p)
        }
    }

    /// Releases item `index`'s slot (it left the wanted set): cancels its job, drops frames and decoder. The slot
    /// goes unless its cancelled job still runs.
    private mutating func release(_ index: Int) {
        guard let p = position(of: index), slots[p].wanted != nil else { return }
        slots[p].wanted = nil
        releaseReservation(p)
        switch slots[p].job {
        case .running(let lane):
            counters.cancelledWhileRunning += 1
            cancel(lane)
            if reportsEvents { events.append(.cancelled(index: index, running: true)) }
        case .queued:
            counters.cancelledBeforeStart += 1
            slots[p].job = .none
            queuedJobs -= 1
            if reportsEvents { events.append(.cancelled(index: index, running: false)) }
        case .none:
            break
        }
        drop(p, firstToo: true)
        releaseHandle(p)
        if slots[p].job == .none { remove(index) }
    }

    private mutating func cancel(_ lane: Int) {
        guard lanes[lane]?.cancelled == false else { return }
        lanes[lane]!.cancelled = true
        actions.append(.cancel(lane: lane))
    }

    private mutating func releaseHandle(_ p: Int) {
        guard slots[p].hasHandle else { return }
        slots[p].hasHandle = false
        releaseLoop(p)
        actions.append(.releaseHandle(index: slots[p].index))
    }

    private mutating func drop(_ p: Int, firstToo: Bool) {
        let index = slots[p].index
        let count = slots[p].bufferedFrames
        if count > 0 {
            for _ in 0..<count { counters.decodedBytes -= popNewestFrame(at: p).bytes }
            counters.framesDropped += count
            actions.append(.dropBuffered(index: index, count: count))
        }
        if firstToo, slots[p].hasFirstFrame {
            counters.decodedBytes -= slots[p].firstBytes
            counters.framesDropped += 1
            slots[p].hasFirstFrame = false
            slots[p].firstBytes = 0
            if let stage = slots[p].stage, stage > .probed { slots[p].stage = .probed }
            actions.append(.dropFirst(index: index))
        }
        if count > 0 || firstToo { forgetDecoderPosition(p) }
    }

    /// Frames the slot's decoder had passed were dropped unshown: its kept decoder goes, and one its running job
    /// hands back is not kept, so the next job starts afresh and decodes the frames the slot still holds again
    /// before delivering new ones — nothing skipped, nothing twice.
    private mutating func forgetDecoderPosition(_ p: Int) {
        slots[p].restart = true
        releaseHandle(p)
    }

    /// Makes room for an incoming frame by dropping frames worth less than it, in the rules' order: buffered frames
    /// (newest first) of the slots it names, then their first frames, farthest slot first, until the frame fits. A
    /// victim is starved (not refilled until the current item changes) and its running job is cancelled. (When no
    /// other slot holds a frame there is nothing to order: the rules are not asked.)
    private mutating func evict(toFit bytes: Int, for p: Int, incomingIsFirst: Bool) {
        let index = slots[p].index
        var othersHold = false
        for v in slots.indices where v != p && (slots[v].bufferedFrames > 0 || slots[v].hasFirstFrame) {
            othersHold = true
            break
        }
        guard othersHold else { return }
        // The order depends only on these values; deliveries in a row usually ask the same question.
        let key = EvictionKey(index: index, incomingIsFirst: incomingIsFirst, current: current,
                              slotsVersion: slotsVersion)
        if evictionKey != key {
            let order = rules.evictionOrder(for: index, incomingIsFirst: incomingIsFirst, current: current,
                                            others: slotKeys)
            evictionBuffered = order.buffered.compactMap { position(of: $0) }
            evictionFirst = order.first.compactMap { position(of: $0) }
            evictionKey = key
        }
        for v in evictionBuffered where slots[v].bufferedFrames > 0 {
            var count = 0, freed = 0
            while !rules.fits(bytes, held: counters.decodedBytes), slots[v].bufferedFrames > 0 {
                let last = popNewestFrame(at: v)
                counters.decodedBytes -= last.bytes
                freed += last.bytes
                count += 1
            }
            guard count > 0 else { continue }
            actions.append(.dropBuffered(index: slots[v].index, count: count))
            noteEvicted(v, frames: count, bytes: freed)
        }
        for v in evictionFirst {
            guard !rules.fits(bytes, held: counters.decodedBytes), slots[v].hasFirstFrame else { continue }
            let freed = slots[v].firstBytes
            counters.decodedBytes -= freed
            slots[v].hasFirstFrame = false
            slots[v].firstBytes = 0
            slots[v].stage = .probed
            actions.append(.dropFirst(index: slots[v].index))
            noteEvicted(v, frames: 1, bytes: freed)
        }
    }

    private mutating func noteEvicted(_ v: Int, frames: Int, bytes: Int) {
        counters.framesDropped += frames
        slots[v].starved = true
        forgetDecoderPosition(v)
        if let lane = slots[v].runningLane { cancel(lane) }
        if reportsEvents { events.append(.evicted(index: slots[v].index, frames: frames, bytes: bytes)) }
    }

    // MARK: - Slot table

    /// The position of item `index`'s slot, which the job on `lane` works for: remembered per lane while no slot is
    /// added or removed (deliveries come one frame at a time, so this saves a scan per frame).
    @inline(__always)
    private mutating func position(of index: Int, onLane lane: Int) -> Int? {
        if let job = lanes[lane], job.index == index, job.positionVersion == slotsVersion { return job.position }
        guard let p = position(of: index) else { return nil }
        if lanes[lane]?.index == index {
            lanes[lane]!.position = p
            lanes[lane]!.positionVersion = slotsVersion
        }
        return p
    }

    /// The position of the current item's slot, remembered while no slot is added or removed.
    @inline(__always)
    private mutating func currentPosition() -> Int? {
        if currentCache.version == slotsVersion && currentCache.index == current { return currentCache.position }
        guard let p = position(of: current) else { return nil }
        currentCache = (current, p, slotsVersion)
        return p
    }

    /// Where item `index`'s slot is in ``slots``, if it has one.
    @inlinable
    public func position(of index: Int) -> Int? {
        var i = 0
        while i < slotKeys.count {
            if slotKeys[i] == index { return i }
            i += 1
        }
        return nil
    }

    // MARK: - Buffered frames

    /// Seconds of `count` frames like the uniform frame of the slot at `p`, summed one at a time: a buffer of equal
    /// frames is only a count, and its seconds come from a table kept per frame duration, as many sums as the budget
    /// can hold frames of that size (at most 65,536; beyond, summed on demand). The slot remembers where its table is.
    @inline(__always)
    private func uniformSeconds(_ count: Int, at p: Int) -> Double {
        if count < slots[p].sumsLimit { return sumValues[slots[p].sumsStart + count] }
        return uniformSecondsBeyond(count, at: p)
    }

    @inline(never)
    private func uniformSecondsBeyond(_ count: Int, at p: Int) -> Double {
        let duration = slots[p].uniformFrame!.duration
        var sum = sumValues[slots[p].sumsStart + slots[p].sumsLimit - 1]
        for _ in slots[p].sumsLimit - 1 ..< count { sum += duration }
        return sum
    }

    /// Points the slot at `p` at the sums table of `frame`'s duration (made on first use).
    @inline(never)
    private mutating func useSumsTable(of frame: BufferedFrame, at p: Int) {
        var t = 0
        while t < sumDurations.count, sumDurations[t] != frame.duration { t += 1 }
        if t == sumDurations.count {
            let limit = max(min(rules.budget / max(frame.bytes, 1), 1 << 16) + 1, 2)
            sumDurations.append(frame.duration)
            sumStarts.append(sumValues.count)
            sumLimits.append(limit)
            var sum = 0.0
            sumValues.append(sum)
            for _ in 1..<limit {
                sum += frame.duration
                sumValues.append(sum)
            }
        }
        slots[p].sumsStart = sumStarts[t]
        slots[p].sumsLimit = sumLimits[t]
    }

    /// Appends `frame` as the newest buffered frame of the slot at `p`.
    @inline(__always)
    private mutating func appendFrame(_ frame: BufferedFrame, at p: Int) {
        let count = slots[p].bufferedFrames
        if count == 0 || slots[p].uniformFrame == frame {
            // Equal frames: a count, and the seconds from the table.
            if count == 0 {
                slots[p].uniformFrame = frame
                if slots[p].sumsLimit == 0 || sumValues[slots[p].sumsStart + 1] != frame.duration {
                    useSumsTable(of: frame, at: p)
                }
            }
            slots[p].bufferedSeconds = uniformSeconds(count + 1, at: p)
            slots[p].bufferedFrames = count + 1
        } else {
            appendMixedFrame(frame, at: p)
        }
    }

    /// ``appendFrame(_:at:)`` when the frames differ.
    @inline(never)
    private mutating func appendMixedFrame(_ frame: BufferedFrame, at p: Int) {
        let count = slots[p].bufferedFrames
        if let same = slots[p].uniformFrame {
            // Mixed from now on: the frames go into runs, with their sums.
            var mixed = BufferedFrames()
            for _ in 0..<count { mixed.append(same) }
            buffers[p] = mixed
            slots[p].uniformFrame = nil
        }
        buffers[p].append(frame)
        slots[p].bufferedFrames = count + 1
        slots[p].bufferedSeconds = buffers[p].seconds
    }

    /// Removes and returns the newest buffered frame of the slot at `p` (it has one).
    @inline(__always)
    private mutating func popNewestFrame(at p: Int) -> BufferedFrame {
        guard let same = slots[p].uniformFrame else { return popNewestMixedFrame(at: p) }
        let count = slots[p].bufferedFrames - 1
        let seconds = count == 0 ? 0 : uniformSeconds(count, at: p)
        slots[p].bufferedFrames = count
        slots[p].bufferedSeconds = seconds
        if count == 0 { slots[p].uniformFrame = nil }
        return same
    }

    @inline(never)
    private mutating func popNewestMixedFrame(at p: Int) -> BufferedFrame {
        slots[p].bufferedFrames -= 1
        let last = buffers[p].popLast()
        settleMixed(at: p)
        return last
    }

    /// Removes and returns the oldest buffered frame of the slot at `p` (it has one). Of equal frames, any one.
    @inline(__always)
    private mutating func takeOldestFrame(at p: Int) -> BufferedFrame {
        guard slots[p].uniformFrame == nil else { return popNewestFrame(at: p) }
        return takeOldestMixedFrame(at: p)
    }

    @inline(never)
    private mutating func takeOldestMixedFrame(at p: Int) -> BufferedFrame {
        slots[p].bufferedFrames -= 1
        let first = buffers[p].removeFirst()
        settleMixed(at: p)
        return first
    }

    /// After a mixed buffer lost a frame: its seconds, and back to a count once its frames are all the same again.
    private mutating func settleMixed(at p: Int) {
        if let same = buffers[p].onlyFrame {
            slots[p].uniformFrame = same
            useSumsTable(of: same, at: p)
            slots[p].bufferedSeconds = uniformSeconds(slots[p].bufferedFrames, at: p)
            buffers[p] = BufferedFrames()
        } else {
            slots[p].bufferedSeconds = buffers[p].seconds
        }
    }

    private mutating func add(_ slot: Slot) -> Int {
        slotKeys.append(slot.index)
        slots.append(slot)
        buffers.append(BufferedFrames())
        slotsVersion += 1
        return slotKeys.count - 1
    }

    private mutating func remove(_ index: Int) {
        guard let i = position(of: index) else { return }
        slotKeys.remove(at: i)
        slots.remove(at: i)
        buffers.remove(at: i)
        failures[index] = nil
        slotsVersion += 1
    }

}

/// What ``PrefetchRules/evictionOrder(for:incomingIsFirst:current:others:)`` was last asked (the set of slots by its
/// version).
private struct EvictionKey: Equatable {
    var index: Int
    var incomingIsFirst: Bool
    var current: Int
    var slotsVersion: Int
}
