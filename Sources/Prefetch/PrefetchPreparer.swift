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
    /// cancelled, or over the memory budget). Check `job.token` between packets. Returns the handle to keep for a
    /// later job on the same item (the scheduler drops it if the job was cancelled). Throwing marks the item failed.
    func prepare(_ job: PrefetchJob<Frame>, from handle: Handle?) throws -> Handle?

    /// Bytes the frame holds (counted against the memory budget).
    func byteCount(of frame: Frame) -> Int
    /// The frame's duration in seconds (for buffered stages).
    func duration(of frame: Frame) -> Double
}

/// One unit of prefetch work as a preparer sees it.
public struct PrefetchJob<Frame: Sendable>: Sendable {
    /// The item.
    public let index: Int
    /// The stage wanted when the job started (it may change while it runs; ``deliver(_:)`` knows).
    public let target: PrefetchStage
    /// The stage the item had already reached when the job started, if any.
    public let startStage: PrefetchStage?
    /// Cancelled when the item leaves the wanted set.
    public let token: WorkToken
    let onDeliver: @Sendable (Frame) -> Bool
    let onReach: @Sendable (PrefetchStage) -> Bool

    /// A job as the scheduler (or a test) makes it.
    public init(index: Int, target: PrefetchStage, startStage: PrefetchStage?, token: WorkToken,
                deliver: @escaping @Sendable (Frame) -> Bool, reached: @escaping @Sendable (PrefetchStage) -> Bool) {
        self.index = index
        self.target = target
        self.startStage = startStage
        self.token = token
        self.onDeliver = deliver
        self.onReach = reached
    }

    /// Hands over the next decoded frame. Returns false when the job should stop: its target is reached, it was
    /// cancelled, or the frame did not fit the memory budget (then it was dropped).
    public func deliver(_ frame: Frame) -> Bool { !token.isCancelled && onDeliver(frame) }

    /// Reports a stage reached without a frame (`.probed`). Returns false when the job should stop.
    public func reached(_ stage: PrefetchStage) -> Bool { !token.isCancelled && onReach(stage) }
}
