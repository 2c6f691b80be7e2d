/// What happens to prefetch slots, reported through ``PrefetchScheduler/onEvent``.
public enum PrefetchEvent: Sendable, Equatable {
    /// A job started on a worker.
    case started(index: Int, target: PrefetchStage)
    /// An item reached a stage (`.firstFrame` when its first frame arrived).
    case reached(index: Int, stage: PrefetchStage)
    /// A job stopped because its item left the wanted set; `running` tells whether it had started.
    case cancelled(index: Int, running: Bool)
    /// An item failed; its neighbours go on.
    case failed(index: Int, message: String)
    /// Frames dropped to stay inside the memory budget.
    case evicted(index: Int, frames: Int, bytes: Int)
}

/// A copy of one slot's state, taken on the control queue.
public struct SlotSnapshot<Frame: Sendable>: Sendable {
    public var index: Int
    /// The furthest stage reached, if any.
    public var stage: PrefetchStage?
    /// The first frame, when decoded and kept.
    public var firstFrame: Frame?
    /// Frames buffered after the first one, in order.
    public var bufferedFrames: Int
    /// Seconds buffered after the playhead.
    public var bufferedSeconds: Double
    /// The failure message when the item failed.
    public var failure: String?
    /// Whether a job is running or queued for the item.
    public var busy: Bool
}

/// Counters of the scheduler's work.
public struct PrefetchCounters: Sendable, Equatable {
    /// Jobs started on a worker.
    public var jobsStarted = 0
    /// Jobs cancelled before they started (they never ran).
    public var cancelledBeforeStart = 0
    /// Jobs cancelled while running.
    public var cancelledWhileRunning = 0
    /// Requests merged into an existing job of the same item.
    public var merged = 0
    /// Frames delivered by preparers and kept.
    public var framesDelivered = 0
    /// Frames dropped: evicted for the budget, rejected over it, or released with their slot, without being taken.
    public var framesDropped = 0
    /// Decoded bytes held now, and the most ever held.
    public var decodedBytes = 0
    public var peakDecodedBytes = 0
    /// Items that failed.
    public var failures = 0
    /// Times a job asked for room for its next frame and was told to pause (``PrefetchStateMachine/admit(bytes:to:lane:)``).
    public var admissionsPaused = 0
    /// Items whose whole first pass was kept to loop from (``PrefetchStateMachine/holdLoop(frames:bytes:to:lane:)``).
    public var loopsHeld = 0
}
