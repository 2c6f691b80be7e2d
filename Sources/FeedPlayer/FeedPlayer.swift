import Dispatch
import Feed
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Media
import Prefetch

/// The live engine: a bounded window of decoded items around the current one, so that a swipe shows the next
/// video's first frame at once.
///
/// A front end calls ``move(to:)`` (or ``next()``/``previous()``) and gets the first frame immediately when it was
/// prefetched (a hit), or ``CurrentFrame/loading`` and a ``FeedPlayerEvent/firstFrameArrived(index:milliseconds:)``
/// event when it arrives (a miss). Prefetching follows a ``PrefetchPolicy`` on a ``PrefetchScheduler`` backed by the
/// Media layer, within ``FeedPlayerConfiguration/memoryBudget``.
///
/// Thread-safe: `@unchecked Sendable` because every mutable property is only touched while holding `state` (a lock,
/// not a queue: a swipe must never wait behind queued event handling for a thread to run it). Scheduler events are
/// handled on the serial queue `events`, which takes the lock for a moment; the lock order is always player, then
/// the scheduler's control queue. Calls never wait for decoding; they take microseconds.
public final class FeedPlayer: @unchecked Sendable {
    /// The items, in feed order.
    public let items: [FeedItem]
    /// The configuration given at creation.
    public let configuration: FeedPlayerConfiguration
    /// The policy in use.
    public let policy: any PrefetchPolicy

    let scheduler: PrefetchScheduler<MediaPreparer>
    let state = StateLock()
    private let eventQueue = DispatchQueue(label: "videofeed.player.events")
    private let clockOrigin = DispatchTime.now().uptimeNanoseconds

    // Confined to `state`.
    /// Where the viewer is, and the recent swipes the policy reads.
    private(set) var position: FeedPosition
    var current: Int { position.current }
    private var pendingMiss: (index: Int, since: Double)?
    private var ttff: [Double] = []
    private var swipes = 0, hits = 0, misses = 0, shown = 0
    var stalls = 0
    var playheadShownFirst = false
    var generation = 0
    private var eventHandler: (@Sendable (FeedPlayerEvent) -> Void)?
    private var arrivalWaiters: [(index: Int, body: @Sendable (CurrentFrame) -> Void)] = []

    /// - Parameters:
    ///   - feed: the items to play, in order (load them with a `FeedLoader`).
    ///   - policy: what to prefetch (default: ``WindowPolicy`` — current ± 2).
    ///   - configuration: display size and format, workers, memory budget.
    public init(feed: [FeedItem], policy: any PrefetchPolicy = .window(),
                configuration: FeedPlayerConfiguration = FeedPlayerConfiguration()) {
        // Frames come and go with every swipe: return them to the system so resident memory follows the budget.
        AllocatorTuning.returnLargeBlocks()
        self.items = feed
        self.policy = policy
        self.configuration = configuration
        self.position = FeedPosition(length: feed.count, wraps: configuration.wraps)
        let sources = feed.map { $0.source.isFileURL ? $0.source.path : $0.source.absoluteString }
        scheduler = PrefetchScheduler(
            preparer: MediaPreparer(sources: sources, configuration: configuration), policy: policy,
            feedLength: feed.count, wraps: configuration.wraps, workers: configuration.workers,
            budget: configuration.memoryBudget)
        scheduler.setEventHandler { [weak self] event in
            guard let self else { return }
            self.eventQueue.async { self.state.sync { self.handle(event) } }
        }
    }

    deinit { scheduler.shutdown() }

    /// Receives every ``FeedPlayerEvent`` on a background thread; return quickly and do not call back into the
    /// player from the handler (hand the event to your own queue instead).
    public func onEvent(_ handler: (@Sendable (FeedPlayerEvent) -> Void)?) {
        state.sync { eventHandler = handler }
    }

    /// Events as an `AsyncStream` (replaces any ``onEvent(_:)`` handler).
    public func events() -> AsyncStream<FeedPlayerEvent> {
        AsyncStream { continuation in
            onEvent { continuation.yield($0) }
            continuation.onTermination = { [weak self] _ in self?.onEvent(nil) }
        }
    }

    /// The current item's index.
    public var currentIndex: Int { state.sync { current } }

    /// Starts prefetching around `index` without counting a swipe (the first screen).
    public func start(at index: Int = 0) {
        state.sync {
            position.place(at: index)
            scheduler.update(current: current, history: position.history, now: now())
        }
    }

    /// Makes `index` the current item. Returns its first frame at once when prefetched (a hit), else `.loading`
    /// (a miss: ``FeedPlayerEvent/firstFrameArrived(index:milliseconds:)`` follows).
    @discardableResult
    public func move(to index: Int) -> CurrentFrame { move(.jump(index)) }

    /// Moves to the next item (wrapping when configured). See ``move(to:)``.
    @discardableResult
    public func next() -> CurrentFrame { move(.next) }

    /// Moves to the previous item (wrapping when configured). See ``move(to:)``.
    @discardableResult
    public func previous() -> CurrentFrame { move(.previous) }

    /// One swipe, all on `state`: the target is computed from the current index inside the same critical section.
    public func move(_ action: SwipeAction) -> CurrentFrame {
        let started = now()
        return state.sync {
            let (target, isSwipe) = position.move(action, at: started)
            if isSwipe {
                swipes += 1
                generation += 1
                playheadShownFirst = false
            }
            // The answer comes from what the scheduler last published; its update is queued, never waited for.
            let published = scheduler.swipe(to: target, history: position.history, now: started)
            if let failure = published.failure {
                if isSwipe { misses += 1 }
                return .failed(failure)
            }
            if let first = published.first {
                pendingMiss = nil
                if isSwipe {
                    hits += 1
                    shown += 1
                    let ms = (now() - started) * 1000
                    ttff.append(ms)
                    emit(.hit(index: target, milliseconds: ms))
                }
                return .ready(first)
            }
            if isSwipe {
                misses += 1
                pendingMiss = (target, started)
                emit(.miss(index: target))
            }
            return .loading
        }
    }

    /// The current item's first frame if decoded, `.loading` or `.failed` otherwise. Does not count a swipe.
    public func currentFrame() -> CurrentFrame {
        state.sync { frameState(current) }
    }

    /// Calls `body` once the current item `index` has its first frame (at once if it has), or fails.
    public func whenFirstFrame(of index: Int, _ body: @escaping @Sendable (CurrentFrame) -> Void) {
        eventQueue.async { self.state.sync {
            let frame = self.frameState(index)
            if case .loading = frame {
                self.arrivalWaiters.append((index, body))
            } else {
                body(frame)
            }
        } }
    }

    /// Blocks until item `index` has its first frame or failed, or `timeout` passes (then `.loading`).
    public func waitForFirstFrame(of index: Int, timeout: Double) -> CurrentFrame {
        let box = FrameBox()
        let done = DispatchSemaphore(value: 0)
        whenFirstFrame(of: index) { frame in
            box.set(frame)
            done.signal()
        }
        return done.wait(timeout: .now() + timeout) == .success ? box.get() : .loading
    }

    /// Blocks until no prefetch work is queued or running (the window has settled), or `timeout` passes.
    @discardableResult
    public func settle(timeout: Double) -> Bool { scheduler.waitUntilIdle(timeout: timeout) }

    /// Indexes of the items held in the window now.
    public var windowIndexes: [Int] { scheduler.slotIndexes }

    /// What was measured so far.
    public var metrics: FeedPlayerMetrics {
        let counters = scheduler.counters
        return state.sync {
            var m = FeedPlayerMetrics()
            m.swipes = swipes
            m.hits = hits
            m.misses = misses
            let sorted = ttff.sorted()
            m.timeToFirstFrameP50 = Percentile.nearestRank(0.50, of: sorted)
            m.timeToFirstFrameP95 = Percentile.nearestRank(0.95, of: sorted)
            m.timeToFirstFrameP99 = Percentile.nearestRank(0.99, of: sorted)
            m.stalls = stalls
            m.framesDecoded = counters.framesDelivered
            m.framesShown = shown
            m.wastedFrames = max(0, counters.framesDelivered - shown)
            m.cancellations = counters.cancelledBeforeStart + counters.cancelledWhileRunning
            m.peakDecodedBytes = counters.peakDecodedBytes
            m.memoryBudget = configuration.memoryBudget
            m.failures = counters.failures
            return m
        }
    }

    /// Decoded bytes held now (exact).
    public var decodedBytes: Int { scheduler.counters.decodedBytes }

    /// Stops all prefetching and releases every decoded frame and decoder.
    public func shutdown() { scheduler.shutdown() }

    // MARK: - On `state`

    func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds - clockOrigin) / 1e9 }

    func emit(_ event: FeedPlayerEvent) { eventHandler?(event) }

    func countShown() { shown += 1 }

    /// From the scheduler's board: never waits for its control queue while holding `state`.
    private func frameState(_ index: Int) -> CurrentFrame {
        let published = scheduler.published(index)
        if let failure = published.failure { return .failed(failure) }
        return published.first.map { .ready($0) } ?? .loading
    }

    private func handle(_ event: PrefetchEvent) {
        emit(.slot(event))
        switch event {
        case .reached(let index, .firstFrame):
            if let miss = pendingMiss, miss.index == index, index == current {
                let ms = (now() - miss.since) * 1000
                ttff.append(ms)
                shown += 1
                pendingMiss = nil
                emit(.firstFrameArrived(index: index, milliseconds: ms))
            }
            fireWaiters(index)
        case .failed(let index, let message):
            if pendingMiss?.index == index { pendingMiss = nil }
            emit(.failed(index: index, message: message))
            fireWaiters(index)
        default:
            break
        }
    }

    private func fireWaiters(_ index: Int) {
        guard arrivalWaiters.contains(where: { $0.index == index }) else { return }
        let frame = frameState(index)
        if case .loading = frame { return }
        let ready = arrivalWaiters.filter { $0.index == index }
        arrivalWaiters.removeAll { $0.index == index }
        for waiter in ready { waiter.body(frame) }
    }
}

/// Hands one value from a callback to a waiting thread. `@unchecked Sendable`: `value` is only touched under `lock`.
final class FrameBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: CurrentFrame = .loading
    func set(_ frame: CurrentFrame) { lock.withLock { value = frame } }
    func get() -> CurrentFrame { lock.withLock { value } }
}

/// A mutual-exclusion lock with the `sync` spelling of a serial queue. `@unchecked Sendable`: NSLock is thread-safe.
final class StateLock: @unchecked Sendable {
    private let lock = NSLock()

    func sync<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

}
