import EngineSupport

/// The engine that does the real work for ``PrefetchScheduler``: the live FeedPlayer's preparer opens and decodes with
/// FFmpeg; PolicyLab's charges virtual time; tests use a controllable double.
public protocol PrefetchPreparer: Sendable {
    /// Per-item state kept between jobs (an open decoder). The scheduler runs at most one job per item at a time and
    /// only stores the handle between jobs, so a handle is used by one thread at a time.
    associatedtype Handle: Sendable
    /// A prepared frame, e.g. a converted picture with its presentation time.
    associatedtype Frame: Sendable

    /// Brings item `job.index` towards `job.target`, starting from `handle` (nil: nothing prepared yet).
    ///
    /// Call `job.reached(.probed)` once the item is opened, then `job.deliver(_:)` for each decoded frame in
    /// presentation order — the first one is the item's first frame — until it returns false (target reached,
    /// cancelled, or over the memory budget). Before decoding each frame after the item's first, ask
    /// `job.admit(bytes:)` (the frame's size is known from the first) and return, keeping the decoder at the
    /// undecoded frame, unless it says ``PrefetchStateMachine/Admission/go``. Without a handle, an item already holds
    /// `job.heldFrames` frames: decode that many again without delivering them. Check `job.token` between packets.
    /// An item whose whole first pass was decoded may keep its frames in the handle and serve later loops from them
    /// if `job.holdLoop(frames:bytes:)` says yes (their bytes are then counted until the handle is dropped).
    /// Returns the handle to keep for a later job on the same item (the scheduler drops it if the job was cancelled).
    /// Throwing marks the item failed.
    func prepare(_ job: PrefetchJob<Frame>, from handle: Handle?) throws -> Handle?

    /// Bytes the frame holds (counted against the memory budget).
    func byteCount(of frame: Frame) -> Int
    /// The frame's duration in seconds (for buffered stages).
    func duration(of frame: Frame) -> Double
}

/// One unit of prefetch work as a preparer sees it.
///
/// Frames are handed to the scheduler without waiting for it (the worker never holds the control queue, so a swipe
/// never waits behind a low-priority worker). The job itself knows when its target is reached from what it
/// delivered; the scheduler can stop it early (the item became less wanted, or the budget is full) or cancel it
/// (the item left the wanted set).
public final class PrefetchJob<Frame: Sendable>: Sendable {
    /// The item.
    public let index: Int
    /// The stage wanted when the job started.
    public let target: PrefetchStage
    /// The stage the item had already reached when the job started, if any.
    public let startStage: PrefetchStage?
    /// Cancelled when the item leaves the wanted set.
    public let token: CancellationToken
    /// Frames the item holds when the job starts (its first frames, in order): a job without a kept decoder decodes
    /// this many again before it delivers anything.
    public let heldFrames: Int
    /// Whether the item holds its first frame when the job starts (every frame this job delivers is then a
    /// buffered one, admitted first).
    public var startsWithFirstFrame: Bool { hadFirstFrame }
    private let hadFirstFrame: Bool
    private let bufferedAtStart: Double
    private let onDeliver: @Sendable (Frame) -> Void
    private let onReach: @Sendable (PrefetchStage) -> Void
    private let onAdmit: @Sendable (Int) -> PrefetchStateMachine.Admission
    private let onHoldLoop: @Sendable (_ frames: Int, _ bytes: Int) -> Bool
    private let durationOf: @Sendable (Frame) -> Double
    private let progress = Locked<(delivered: Int, seconds: Double, stopped: Bool)>((0, 0, false))

    /// A job as the scheduler (or a test) makes it: `hasFirstFrame`, `bufferedSeconds` and `heldFrames` describe what
    /// the item already holds; `deliver` and `reached` hand results over without blocking; `admit` asks for room for
    /// a frame (the scheduler answers at once; the default always says go); `holdLoop` asks to keep a whole first
    /// pass of `frames` frames and `bytes` bytes to loop from (the default always says no).
    public init(index: Int, target: PrefetchStage, startStage: PrefetchStage?, hasFirstFrame: Bool,
                bufferedSeconds: Double, heldFrames: Int = 0, token: CancellationToken,
                duration: @escaping @Sendable (Frame) -> Double,
                deliver: @escaping @Sendable (Frame) -> Void, reached: @escaping @Sendable (PrefetchStage) -> Void,
                admit: @escaping @Sendable (Int) -> PrefetchStateMachine.Admission = { _ in .go },
                holdLoop: @escaping @Sendable (_ frames: Int, _ bytes: Int) -> Bool = { _, _ in false }) {
        self.onHoldLoop = holdLoop
        self.index = index
        self.target = target
        self.startStage = startStage
        self.hadFirstFrame = hasFirstFrame
        self.heldFrames = heldFrames
        self.onAdmit = admit
        self.bufferedAtStart = bufferedSeconds
        self.token = token
        self.durationOf = duration
        self.onDeliver = deliver
        self.onReach = reached
    }

    /// Whether the job should go on: not cancelled, not stopped, target not yet reached.
    public var shouldContinue: Bool {
        guard !token.isCancelled else { return false }
        return progress.withLock { needsMore($0) }
    }

    /// Hands over the next decoded frame (the item's first frame first). Returns false when the job should stop.
    public func deliver(_ frame: Frame) -> Bool {
        guard !token.isCancelled else { return false }
        let seconds = durationOf(frame)
        let more: Bool = progress.withLock { p in
            if p.stopped { return false }
            if hadFirstFrame || p.delivered > 0 { p.seconds += seconds }
            p.delivered += 1
            return needsMore(p)
        }
        onDeliver(frame)
        return more && !token.isCancelled
    }

    /// Asks for room for the next frame, `bytes` big, before decoding it: ``PrefetchStateMachine/Admission/go``
    /// (decode it; its bytes are reserved), `.pause` (no room now: return, keeping the decoder where it is; the item is
    /// queued again once there may be room) or `.stop` (the job has done enough, was stopped or cancelled: return).
    public func admit(bytes: Int) -> PrefetchStateMachine.Admission {
        guard shouldContinue else { return .stop }
        return onAdmit(bytes)
    }

    /// Asks to keep the item's whole first pass, `frames` frames of `bytes` in all, in the handle and serve later
    /// loops from it instead of decoding them again (``PrefetchStateMachine/holdLoop(frames:bytes:to:lane:)``).
    /// False when the job is cancelled, the pass is over the bound, or it does not fit the budget: then let the
    /// frames go and loop by decoding.
    public func holdLoop(frames: Int, bytes: Int) -> Bool {
        guard !token.isCancelled else { return false }
        return onHoldLoop(frames, bytes)
    }

    /// Reports a stage reached without a frame (`.probed`). Returns false when the job should stop.
    public func reached(_ stage: PrefetchStage) -> Bool {
        guard !token.isCancelled else { return false }
        onReach(stage)
        return shouldContinue
    }

    /// Asks the job to stop at its next frame, keeping its decoder for later (unlike a cancel).
    func stop() { progress.withLock { $0.stopped = true } }

    private func needsMore(_ p: (delivered: Int, seconds: Double, stopped: Bool)) -> Bool {
        PrefetchRules.jobNeedsMore(target: target, hadFirstFrame: hadFirstFrame, bufferedAtStart: bufferedAtStart,
                                   delivered: p.delivered, deliveredSeconds: p.seconds, stopped: p.stopped)
    }
}

