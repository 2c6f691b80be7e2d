import EngineSupport
import Feed
import Foundation
import Media
import Prefetch
import Transcode

/// Every connected viewer's position, turned into prefetch work on the shared pool by the live engine's own
/// ``PrefetchPolicy``.
///
/// A viewer says where it is (the feed index on screen and its playhead); the policy decides which items to prepare
/// and how far, exactly as in FeedPlayer and PolicyLab; the hub maps each stage to the files a browser needs:
///
/// | stage | made ahead |
/// | --- | --- |
/// | `probed` | the manifest (plan, codecs; with it the H.264 ladder's inits and first segments) |
/// | `firstFrame` | + the poster and the viewer's rendition's first segment |
/// | `buffered(s)` | + the segments from the playhead to `s` seconds past it (at least the next one) |
///
/// The policy's priority orders the work (nearer items first); requests that wait for bytes outrank all of it. When a
/// viewer moves on, the work only it wanted is dropped or cancelled; when it disconnects, all of it.
public final class ViewerHub: Sendable {
    /// One viewer's answer to a position: whether the new item was ready, and the window as the engine sees it.
    public struct Answer: Sendable {
        /// For a move to a new item: whether its first segment was in the cache when the move arrived.
        public var hit: Bool?
        /// current ± 2 with their states (`ready`, `working`, `queued`, `failed`, `pending`).
        public var window: [(index: Int, state: String)]
    }

    private struct Viewer {
        var box: (width: Int, height: Int) = (720, 1280)
        /// Whether the page said its box (then the box rule decides, as on the page).
        var knowsBox = false
        /// The rendition the page said it plays, by name (used when the box is not known and the item has it).
        var rendition: String? = nil
        /// The most bits per second the page's network affords (its estimate, with its margin), when it said.
        var bandwidth: Int? = nil
        /// The video codec the page plays where an item has renditions of it (``ItemManifest/renditions(playing:)``).
        var codec: VideoCodec = .h264
        /// Where the viewer is and its recent swipes (nil until it first says where it is): moved by
        /// ``FeedPosition``'s rule, as FeedPlayer and PolicyLab move their viewers.
        var position: FeedPosition? = nil
        /// The public ID on screen, when the page said it (positions move as a watched feed changes).
        var currentItem: String? = nil
        var time: Double = 0
        /// The codec the card on screen plays, when the page said (it may play the H.264 ladder of an item whose AV1
        /// set was not made when it was shown).
        var playing: VideoCodec? = nil
    }

    let engine: ServeEngine
    let policy: any PrefetchPolicy
    /// The window the page keeps around its current card, as ``policy`` asks (told to each viewer on connect).
    public let pageWindow: PageWindow
    private let viewers = Locked<[Int: Viewer]>([:])
    /// What the server tells each viewer without being asked (the listing changed), by viewer.
    private let outboxes = Locked<[Int: AsyncStream<String>.Continuation]>([:])
    private let counter = Locked(0)
    private let started = Date()

    /// A hub preparing work on `engine` with `policy`.
    public init(engine: ServeEngine, policy: any PrefetchPolicy) {
        self.engine = engine
        self.policy = policy
        self.pageWindow = PageWindow(policy: policy)
    }

    /// A new viewer's id.
    public func connect() -> Int {
        let id = counter.withLock { n -> Int in n += 1; return n }
        viewers.withLock { $0[id] = Viewer() }
        engine.metrics.viewers.set(Double(viewers.withLock { $0.count }))
        return id
    }

    /// Messages for `viewer` the server sends unasked (``feedChanged(_:)``), the latest few kept while it is slow.
    func outbox(_ viewer: Int) -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(4))
        outboxes.withLock { $0[viewer] = continuation }
        return stream
    }

    /// Forgets `viewer` and every piece of work only it wanted.
    public func disconnect(_ viewer: Int) {
        outboxes.withLock { $0.removeValue(forKey: viewer) }?.finish()
        viewers.withLock { $0[viewer] = nil }
        engine.pool.focus(viewer: viewer, on: nil)
        engine.pool.want(viewer: viewer, [:])
        engine.metrics.viewers.set(Double(viewers.withLock { $0.count }))
    }

    /// The viewer's display box in device pixels, the rendition it plays by name, the bits per second its network
    /// affords, and the video codec it plays, when it says: they decide which rendition's segments are made ahead
    /// for it (the box, by the page's own rule, when it is given, among the renditions of its codec, capped by the
    /// bandwidth as the page caps it). A viewer that says `av1` has an item's AV1 renditions made ahead for it.
    public func hello(_ viewer: Int, width: Int?, height: Int?, rendition: String?, bandwidth: Int? = nil,
                      codec: VideoCodec? = nil) {
        viewers.withLock { v in
            if let width, let height {
                v[viewer]?.box = (max(1, width), max(1, height))
                v[viewer]?.knowsBox = true
            }
            if let rendition { v[viewer]?.rendition = rendition }
            v[viewer]?.bandwidth = bandwidth
            v[viewer]?.codec = codec ?? .h264
        }
    }

    /// The rendition `viewer` plays of an item with `manifest`: by the box rule the page applies per item when the
    /// box is known (among the renditions of `codec`, else of the codec the viewer plays); else the one it named,
    /// when the item has it; else the one for the default box.
    private func rendition(_ manifest: ItemManifest, for viewer: Viewer, codec: VideoCodec? = nil) -> Int {
        if !viewer.knowsBox, let named = viewer.rendition.flatMap(manifest.rendition(named:)) { return named }
        let audio = manifest.plan.hasAudio ? engine.configuration.settings.audioBitrate : 0
        return manifest.rendition(forBox: viewer.box.width, viewer.box.height, within: viewer.bandwidth, audio: audio,
                                  codec: codec ?? viewer.codec)
    }

    /// The viewer is at `index` with its playhead at `time` seconds: re-plans its prefetch, and tells whether a
    /// move to a new item found it ready.
    ///
    /// With `item` (the public ID on screen), the viewer is placed where that item is now (`index` is a hint, used
    /// when the item is not listed). With `playing`, the card on screen plays that codec: its segments made ahead
    /// are of that codec's rendition (a card shown before its AV1 set was made plays the H.264 ladder).
    public func move(_ viewer: Int, to hint: Int, item: String? = nil, time: Double,
                     playing: VideoCodec? = nil) async -> Answer {
        // An index past any the server lists (``ViewerMessage/maxIndex``) plans nothing and is not remembered.
        guard (0...ViewerMessage.maxIndex).contains(hint) else { return Answer(hit: nil, window: []) }
        let catalog = engine.catalog
        var index = hint
        if let item, let at = await catalog.position(of: item) { index = at }
        let now = Date().timeIntervalSince(started)
        // The item on screen (its listing page loaded if need be), then the feed's length, which that page may grow.
        let current = try? await catalog.entry(at: index)
        let total = await catalog.total
        let loaded = await catalog.loadedCount
        // The feed as far as it is known, and at least up to the viewer's item.
        let length = max(total ?? loaded, index + 1)
        let wraps = total != nil
        let seen = viewers.withLock { v -> (viewer: Viewer, position: FeedPosition, moved: Bool)? in
            guard var state = v[viewer] else { return nil }
            // Another item on screen: by its public ID when both are known (the listing may have moved it), else by
            // index. The first position said is a move (it counts as a hit or a miss) but not a swipe.
            let moved = item != nil && state.currentItem != nil
                ? state.currentItem != item : state.position?.current != index
            var position = state.position ?? FeedPosition(length: length, wraps: wraps, current: index)
            position.length = length
            position.wraps = wraps
            // FeedPosition's rule: a move to another index is a swipe and joins the history (the last
            // ``FeedPosition/historyLimit``); the same item at a new index (the listing changed) is only placed.
            if moved { position.move(.jump(index), at: now) } else { position.place(at: index) }
            state.position = position
            state.currentItem = item
            if time.isFinite { state.time = max(0, time) }
            // What the card on screen plays: said with this position, or kept from before for the same item.
            if playing != nil || moved { state.playing = playing }
            v[viewer] = state
            return (state, position, moved)
        }
        guard let seen else { return Answer(hit: nil, window: []) }
        var hit: Bool? = nil
        // The viewer waits for this item's files: its requests run before those for other items.
        engine.pool.focus(viewer: viewer, on: current?.folder)
        if seen.moved, let entry = current {
            hit = firstSegmentKey(entry.folder, for: seen.viewer, codec: seen.viewer.playing)
                .map(engine.cache.contains) ?? false
            if hit == true { engine.metrics.prefetchHits.increment() } else { engine.metrics.prefetchMisses.increment() }
        }
        let context = PrefetchContext(current: seen.position.current, feedLength: length, wraps: wraps,
                                      history: seen.position.history, now: now)
        var wants: [JobKey: Int] = [:]
        func want(_ key: JobKey, _ priority: Int) {
            wants[key] = max(wants[key] ?? Int.min, priority)
        }
        for request in policy.wanted(in: context) {
            guard let entry = try? await catalog.entry(at: request.index) else { continue }
            let folder = entry.folder
            guard let manifest = engine.knownManifest(folder) else {
                if !engine.cache.contains(ItemFile.manifest.key(in: folder)) {
                    want(JobKey(folder: folder, artifact: .manifest), request.priority)
                } else {
                    // On disk from another run or replica: read into memory now, plan with it next time.
                    _ = try? await engine.manifest(for: entry)
                }
                continue
            }
            guard request.stage >= .firstFrame else { continue }
            if !engine.cache.contains(ItemFile.poster.key(in: folder)) {
                want(JobKey(folder: folder, artifact: .poster), request.priority)
            }
            let r = rendition(manifest, for: seen.viewer, codec: request.index == index ? seen.viewer.playing : nil)
            var segments = 0...0
            if case .buffered(let ahead) = request.stage {
                let grid = manifest.plan.grid
                let playhead = request.index == index ? max(0, seen.viewer.time) : 0
                let from = grid.index(at: playhead)
                let to = grid.index(at: playhead + max(ahead, grid.seconds))
                segments = from...max(from, to)
            }
            for k in segments where k < manifest.plan.segmentCount {
                let key = JobKey(folder: folder, artifact: .segment(rendition: r, index: k))
                if let file = engine.cacheKey(folder: folder, artifact: key.artifact, manifest: manifest),
                   engine.cache.contains(file) { continue }
                want(key, request.priority)
            }
        }
        engine.pool.want(viewer: viewer, wants)

        var window: [(index: Int, state: String)] = []
        for offset in -2...2 {
            guard let i = context.index(offset: offset), let entry = try? await catalog.entry(at: i) else { continue }
            window.append((i, state(of: entry.folder, for: seen.viewer)))
        }
        return Answer(hit: hit, window: window)
    }

    /// The listing changed (a watched source): every viewer's window is planned again where its item is now (work
    /// for items that went is dropped), and each viewer is told (`{"type":"feed",…}`), with the public IDs removed.
    func feedChanged(_ change: FeedChange, generation: Int, total: Int?, head: String?) async {
        let placed = viewers.withLock { v in
            v.compactMap { id, state in state.position.map { (id, $0.current, state.currentItem) } }
        }
        for (viewer, index, item) in placed {
            _ = await move(viewer, to: index, item: item, time: .nan)
        }
        let message = FeedReply(generation: generation, total: total, head: head,
                                removed: change.removed.prefix(100).map(\.publicID))
        guard let data = try? JSONEncoder().encode(message) else { return }
        let text = String(decoding: data, as: UTF8.self)
        for outbox in outboxes.withLock({ Array($0.values) }) { outbox.yield(text) }
    }

    /// The cache key of the first segment a viewer with `box` plays of the item in `folder` (in `codec` when it
    /// said what the card plays), once its manifest is known.
    private func firstSegmentKey(_ folder: String, for viewer: Viewer, codec: VideoCodec? = nil) -> String? {
        guard let manifest = engine.knownManifest(folder), !manifest.plan.renditions.isEmpty else { return nil }
        let r = rendition(manifest, for: viewer, codec: codec)
        return ItemFile.segment(rendition: manifest.plan.renditions[r].name, index: 0).key(in: folder)
    }

    /// `ready` (first segment cached), `working`, `queued`, `failed` or `pending` (nothing asked yet).
    private func state(of folder: String, for viewer: Viewer) -> String {
        guard let manifest = engine.knownManifest(folder) else {
            return engine.pool.state(of: JobKey(folder: folder, artifact: .manifest))?.rawValue ?? "pending"
        }
        let r = rendition(manifest, for: viewer)
        if let key = firstSegmentKey(folder, for: viewer), engine.cache.contains(key) { return "ready" }
        return engine.pool.state(of: JobKey(folder: folder, artifact: .segment(rendition: r, index: 0)))?.rawValue
            ?? "pending"
    }
}

/// `{"type":"feed","generation":…,"total":…,"head":…,"removed":[…]}`: the listing as it is now (sent when a viewer
/// connects and whenever a watched source changes): how many times it changed, its length when known, its first item,
/// and the items removed by this change (at most 100).
struct FeedReply: Encodable {
    var type = "feed"
    var generation: Int
    var total: Int?
    var head: String?
    var removed: [String]
}
