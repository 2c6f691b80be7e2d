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
    public internal(set) var rules: PrefetchRules
    /// The item on screen.
    public internal(set) var current = 0
    /// Counters of the work, with exact byte accounting.
    public internal(set) var counters = PrefetchCounters()
    /// Whether ``events`` are recorded (the simulator, which has no listener, turns them off; nothing else changes).
    public var reportsEvents: Bool
    /// What the driver must do after the last event, in order. (Plain values: forgetting them frees nothing.)
    public internal(set) var actions: [Action] = []
    /// What the last event reports, in order: to report once its actions are performed.
    public internal(set) var events: [PrefetchEvent] = []

    /// The slots: a handful (the wanted set plus slots whose cancelled job has not returned), so a linear scan of
    /// two small arrays beats hashing on the simulator's hot path.
    @usableFromInline
    var slotKeys: [Int] = []
    /// Every slot, in the order they were added (a slot's place here is its ``position(of:)``, valid until a slot is
    /// removed).
    public internal(set) var slots: [Slot] = []
    /// Each slot's buffered frames while they are mixed, at the slot's position (kept apart so that a slot is a plain
    /// value, copied without reference counting on the simulator's hot path; equal frames are only counted, in the
    /// slot).
    var buffers: [BufferedFrames] = []
    /// Per frame duration `sumDurations[t]`: `sumValues[sumStarts[t] + k]` is the seconds of `k` such frames summed
    /// one at a time, for `k < sumLimits[t]` (see `uniformSeconds`).
    var sumDurations: [Double] = []
    var sumStarts: [Int] = []
    var sumLimits: [Int] = []
    var sumValues: [Double] = []
    /// Why items failed, while their slots last.
    var failures: [Int: String] = [:]
    /// Changes whenever a slot is added or removed (the eviction memo checks it).
    var slotsVersion = 0
    var lanes: [LaneJob?]
    var laneBusy: [Bool]
    /// Jobs queued in slots and running on lanes (so `pump` sees at once when nothing can start).
    public internal(set) var queuedJobs = 0
    public internal(set) var runningJobs = 0
    var queuedScratch: [PrefetchRules.Queued] = []
    /// The last eviction order asked for, as slot positions (valid while `slotsVersion` is the same).
    var evictionKey: EvictionKey?
    var evictionBuffered: [Int] = []
    var evictionFirst: [Int] = []
    /// ``currentPosition()``'s memory.
    var currentCache = (index: -1, position: -1, version: -1)

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
    mutating func beginEvent() {
        // Most events leave one action or none: removing it is cheaper than the general removal.
        switch actions.count {
        case 0: break
        case 1: actions.removeLast()
        default: actions.removeAll(keepingCapacity: true)
        }
        if !events.isEmpty { events.removeAll(keepingCapacity: true) }
    }
}


/// What ``PrefetchRules/evictionOrder(for:incomingIsFirst:current:others:)`` was last asked (the set of slots by its
/// version).
struct EvictionKey: Equatable {
    var index: Int
    var incomingIsFirst: Bool
    var current: Int
    var slotsVersion: Int
}
