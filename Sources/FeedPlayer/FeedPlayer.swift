import Dispatch
import EngineSupport
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
/// A player made with ``paging(_:policy:configuration:pageAhead:)`` plays an endless, paged listing: it asks its
/// ``Feed`` for the next page while the viewer is within `pageAhead` items of the last one loaded, appends the new
/// items without disturbing the window (``FeedPlayerEvent/feedGrew(count:complete:)``), wraps around only once the
/// listing's end is known (and ``FeedPlayerConfiguration/wraps`` asks for it), and survives a page that fails: it
/// keeps playing what it has and tries again after 1, 2, 4 … 30 s (``FeedPlayerEvent/pageFailed(message:)``).
///
/// Thread-safe: `@unchecked Sendable` because every mutable property is only touched while holding `state` (a lock,
/// not a queue: a swipe must never wait behind queued event handling for a thread to run it). Scheduler events are
/// handled on the serial queue `events`, which takes the lock for a moment; the lock order is always player, then
/// the scheduler's control queue. Calls never wait for decoding; they take microseconds.
public final class FeedPlayer: @unchecked Sendable {
    /// The items loaded so far, in feed order.
    public var items: [FeedItem] { catalog.items }
    /// The number of items loaded so far.
    public var itemCount: Int { catalog.count }
    /// Item `index`, if loaded.
    public func item(at index: Int) -> FeedItem? { catalog.item(at: index) }
    /// The configuration given at creation.
    public let configuration: FeedPlayerConfiguration
    /// The policy in use.
    public let policy: any PrefetchPolicy

    let scheduler: PrefetchScheduler<MediaPreparer>
    let state = Lock()
    private let catalog: ItemCatalog
    /// The paged listing the items come from (nil: a fixed list), and how close to its end a page is asked for.
    private let feed: Feed?
    private let pageAhead: Int
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
    var stallSeconds = 0.0
    var playheadShownFirst = false
    var generation = 0
    private var eventHandler: (@Sendable (FeedPlayerEvent) -> Void)?
    /// Paging: whether the listing's end is known, the page load in flight, failures in a row, and when the next
    /// try may start.
    private var feedComplete: Bool
    private var pageLoad: Task<Void, Never>?
    private var pageFailures = 0
    private var retryAt = 0.0
    private var arrivalWaiters: [(index: Int, body: @Sendable (CurrentFrame) -> Void)] = []

    /// - Parameters:
    ///   - feed: the items to play, in order (load them with a `FeedLoader`).
    ///   - policy: what to prefetch (default: ``WindowPolicy`` — current ± 2).
    ///   - configuration: display size and format, workers, memory budget.
    public convenience init(feed: [FeedItem], policy: any PrefetchPolicy = .window(),
                            configuration: FeedPlayerConfiguration = FeedPlayerConfiguration()) {
        self.init(items: feed, complete: true, feed: nil, pageAhead: 0, policy: policy, configuration: configuration)
    }

    /// A player over a paged listing: loads its first page (throwing if that fails), then pages on as the viewer
    /// nears the end of what is loaded.
    /// - Parameters:
    ///   - feed: the listing (its ``Feed/prefetchDistance`` is not used: the player decides when to page).
    ///   - pageAhead: the next page is asked for once the viewer is this many items or fewer from the last loaded
    ///     one (default 5: the window's reach plus a few swipes).
    public static func paging(_ feed: Feed, policy: any PrefetchPolicy = .window(),
                              configuration: FeedPlayerConfiguration = FeedPlayerConfiguration(),
                              pageAhead: Int = 5) async throws -> FeedPlayer {
        try await feed.load(atLeast: 1)
        let items = await feed.items
        let complete = await feed.isComplete
        return FeedPlayer(items: items, complete: complete, feed: feed, pageAhead: max(1, pageAhead), policy: policy,
                          configuration: configuration)
    }

    private init(items: [FeedItem], complete: Bool, feed: Feed?, pageAhead: Int, policy: any PrefetchPolicy,
                 configuration: FeedPlayerConfiguration) {
        // Frames come and go with every swipe: return them to the system so resident memory follows the budget, and
        // keep the small blocks of many threads in few arenas.
        AllocatorTuning.returnLargeBlocks()
        AllocatorTuning.fewArenas()
        self.catalog = ItemCatalog(items)
        self.feed = feed
        self.pageAhead = pageAhead
        self.feedComplete = complete
        self.policy = policy
        self.configuration = configuration
        let wraps = configuration.wraps && complete
        self.position = FeedPosition(length: items.count, wraps: wraps)
        scheduler = PrefetchScheduler(
            preparer: MediaPreparer(catalog: catalog, configuration: configuration), policy: policy,
            feedLength: items.count, wraps: wraps, workers: configuration.workers,
            budget: configuration.memoryBudget, loopHold: configuration.loopHold)
        // The player is never held strongly on the scheduler's control queue: were the last reference dropped
        // there, its deinit would shut the scheduler down from inside that queue. It is taken on the event queue.
        let eventQueue = self.eventQueue
        scheduler.setEventHandler { [weak self] event in
            eventQueue.async { [weak self] in
                guard let self else { return }
                self.state.withLock { self.handle(event) }
            }
        }
    }

    deinit {
        pageLoad?.cancel()
        scheduler.shutdown()
    }

    /// Receives every ``FeedPlayerEvent`` on a background thread; return quickly and do not call back into the
    /// player from the handler (hand the event to your own queue instead).
    public func onEvent(_ handler: (@Sendable (FeedPlayerEvent) -> Void)?) {
        state.withLock { eventHandler = handler }
    }

    /// Events as an `AsyncStream` (replaces any ``onEvent(_:)`` handler).
    public func events() -> AsyncStream<FeedPlayerEvent> {
        AsyncStream { continuation in
            onEvent { continuation.yield($0) }
            continuation.onTermination = { [weak self] _ in self?.onEvent(nil) }
        }
    }

    /// The current item's index.
    public var currentIndex: Int { state.withLock { current } }

    /// Starts prefetching around `index` without counting a swipe (the first screen).
    public func start(at index: Int = 0) {
        state.withLock {
            position.place(at: index)
            scheduler.update(current: current, history: position.history, now: now())
            requestPageIfNeeded()
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
        return state.withLock {
            let (target, isSwipe) = position.move(action, at: started)
            if isSwipe {
                swipes += 1
                generation += 1
                playheadShownFirst = false
            }
            // The answer comes from what the scheduler last published; its update is queued, never waited for.
            let published = scheduler.swipe(to: target, history: position.history, now: started)
            requestPageIfNeeded()
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
        state.withLock { frameState(current) }
    }

    /// Calls `body` once the current item `index` has its first frame (at once if it has), or fails.
    public func whenFirstFrame(of index: Int, _ body: @escaping @Sendable (CurrentFrame) -> Void) {
        eventQueue.async { self.state.withLock {
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
        let box = Locked<CurrentFrame>(.loading)
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
        let work = scheduler.preparer.work.get()
        return state.withLock {
            var m = FeedPlayerMetrics()
            m.swipes = swipes
            m.hits = hits
            m.misses = misses
            let sorted = ttff.sorted()
            m.timeToFirstFrameP50 = Percentile.nearestRank(0.50, of: sorted)
            m.timeToFirstFrameP95 = Percentile.nearestRank(0.95, of: sorted)
            m.timeToFirstFrameP99 = Percentile.nearestRank(0.99, of: sorted)
            m.stalls = stalls
            m.stallSeconds = stallSeconds
            m.framesDecoded = counters.framesDelivered
            m.framesShown = shown
            m.wastedFrames = max(0, counters.framesDelivered - shown)
            m.cancellations = counters.cancelledBeforeStart + counters.cancelledWhileRunning
            m.peakDecodedBytes = counters.peakDecodedBytes
            m.memoryBudget = configuration.memoryBudget
            m.failures = counters.failures
            m.framesDecodedByDecoders = work.framesDecoded
            m.framesReplayed = work.framesReplayed
            m.itemOpens = work.opens
            m.loopsHeld = counters.loopsHeld
            return m
        }
    }

    /// Decoded bytes held now (exact), held first passes of short clips included.
    public var decodedBytes: Int { scheduler.counters.decodedBytes }

    /// Stops all prefetching and paging, and releases every decoded frame and decoder.
    public func shutdown() {
        state.withLock {
            pageLoad?.cancel()
            feedComplete = true  // no more pages
        }
        scheduler.shutdown()
    }

    /// Whether the listing's end is known (always, for a player over a fixed list).
    public var isFeedComplete: Bool { state.withLock { feedComplete } }

    /// Blocks until no page load is in flight, or `timeout` passes; returns whether none is.
    @discardableResult
    public func waitForPage(timeout: Double) -> Bool {
        pageChanges.wait(timeout: timeout) { state.withLock { pageLoad == nil } }
    }

    /// Notified when a page load ends, for ``waitForPage(timeout:)``.
    private let pageChanges = ChangeSignal()

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

    // MARK: - Paging (on `state`)

    /// Starts loading the next page when the viewer is within `pageAhead` items of the last loaded one, none is in
    /// flight, the listing's end is not known and no retry is being waited for.
    private func requestPageIfNeeded() {
        guard let feed, !feedComplete, pageLoad == nil, now() >= retryAt,
              current + pageAhead >= catalog.count - 1 else { return }
        let known = catalog.count
        pageLoad = Task { [weak self] in
            let result: Result<(items: [FeedItem], complete: Bool), any Error>
            do {
                try await feed.loadNextPage()
                let items = await feed.items
                result = .success((Array(items.dropFirst(known)), await feed.isComplete))
            } catch {
                result = .failure(error)
            }
            self?.state.withLock { self?.pageLoaded(result) }
        }
    }

    private func pageLoaded(_ result: Result<(items: [FeedItem], complete: Bool), any Error>) {
        pageLoad = nil
        defer { pageChanges.notify() }
        switch result {
        case .success(let page):
            pageFailures = 0
            catalog.append(page.items)
            feedComplete = feedComplete || page.complete
            position.length = catalog.count
            position.wraps = configuration.wraps && feedComplete
            // The new items join the window (the ones in it stay as they are).
            scheduler.setFeed(length: position.length, wraps: position.wraps)
            scheduler.update(current: current, history: position.history, now: now())
            emit(.feedGrew(count: position.length, complete: feedComplete))
            requestPageIfNeeded()
        case .failure(let error):
            if error is CancellationError || Task.isCancelled { return }
            pageFailures += 1
            let delay = min(30, pow(2, Double(pageFailures - 1)))
            retryAt = now() + delay
            emit(.pageFailed(message: String(describing: error)))
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
                self?.state.withLock { self?.requestPageIfNeeded() }
            }
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
