import Prefetch

/// One run of ``ServeSimulation``: the viewers (the page's behaviour, viewer model 1 of `scripts/serve-replay.py`),
/// the server (``SimServer`` and ViewerHub's planning) and the clock.
struct ServeWorld {
    /// The page's constants (view.js, card.js, feed.js, app.js) as the replay script names them.
    enum Page {
        static let pageSize = 10
        static let hold = 3.0
        static let ahead = 4.0
        static let early = 4.0
        static let short = 1.5
        static let turn = 3.0
        static let connections = 6
        static let atEvery = 1.0
    }

    enum Event {
        case move(viewer: Int, index: Int)
        case leave(viewer: Int)
        /// An HTTP answer's last byte reaches the viewer.
        case answered(request: Int)
        /// Something of `viewer`'s move `generation` falls due at this time (neighbours' hold, a turn's end, the
        /// playhead reaching a segment's ask time): the viewer looks again at what to ask for.
        case wake(viewer: Int, generation: Int)
        /// The page's periodic `at`.
        case tick(viewer: Int, generation: Int)
    }

    /// What a request asks for: a pending card's fill, or a file.
    enum Ask: Hashable {
        case fill(Int)
        case file(ServedFile)

        var item: Int {
            switch self {
            case .fill(let i): i
            case .file(.manifest(let i)), .file(.poster(let i)), .file(.initialization(let i, _)),
                 .file(.segment(let i, _, _)): i
            }
        }
        var isPoster: Bool { if case .file(.poster) = self { true } else { false } }
    }

    /// One HTTP request of a viewer.
    struct Request {
        var viewer: Int
        var ask: Ask
        /// Whether it waits for its turn (a neighbour's media while the current item is short), until when.
        var turnUntil: Double?
        var onWire = false
        var waiter: (id: UInt64, key: JobKey)?
    }

    /// One viewer.
    struct Viewer {
        var position: FeedPosition
        var generation = 0
        var index = -1
        var moveTime = 0.0
        var hit = false
        var ready = false
        var firstFrame: Double?
        var listedPages: Set<Int> = []
        var pending: Set<Int> = []
        var filled: Set<Int> = []
        var held: Set<ServedFile> = []
        var asked: [Ask: Int] = [:]
        /// What failed (never asked again), and the items that failed: a card whose fill, init or first segment
        /// failed asks for nothing more.
        var failedAsks: Set<Ask> = []
        var failedItems: Set<Int> = []
        var wire = 0
        var queue: [Int] = []
        // Playback: the playhead is `playFrom` at `playAt` and runs until the first unread segment's start.
        var playFrom = 0.0
        var playAt = 0.0
        var stalled: Set<Int> = []
        var left = false
        var moves = 0
        var hits = 0
        var firstFrames: [Double] = []
        var stalls = 0
    }

    let items: [ServedItem]
    let policy: any PrefetchPolicy
    let configuration: ServeSimulation.Configuration
    var server: SimServer
    var events = EventQueue<Event>()
    var now = 0.0
    var viewers: [Int: Viewer] = [:]
    var requests: [Int: Request] = [:]
    var byWaiter: [UInt64: Int] = [:]
    var nextRequest = 0
    var cardMs: [Double] = []
    var posterMs: [Double] = []
    var hitMs: [Double] = []
    var missMs: [Double] = []
    var requestCount = 0
    var errors = 0
    var perMove: [ServeSimulation.MoveResult] = []
    /// The warm-up's request: its waiter and the item it makes.
    var warming: (waiter: UInt64, item: Int)?
    /// Each viewer's current move in `perMove`.
    var moveSlot: [Int: Int] = [:]
    var unfinished = 0

    init(items: [ServedItem], policy: any PrefetchPolicy, configuration: ServeSimulation.Configuration) {
        self.items = items
        self.policy = policy
        self.configuration = configuration
        server = SimServer(items: items, rules: configuration.rules, cores: configuration.cores)
    }

    var count: Int { items.count }

    // MARK: The loop

    mutating func run(_ trace: ViewerTrace) -> ServeSimulation.Result {
        guard !items.isEmpty else { return result() }
        var last: [Int: Double] = [:]
        for move in trace.moves {
            events.push(.move(viewer: move.viewer, index: move.index % count), at: move.time)
            last[move.viewer] = max(last[move.viewer] ?? 0, move.time)
        }
        for (viewer, time) in last.sorted(by: { $0.key < $1.key }) {
            events.push(.leave(viewer: viewer), at: time + configuration.tail)
        }
        warm(0)
        while true {
            let nextEvent = events.nextTime
            let nextJob = server.nextCompletion().map { now + $0 }
            let nextWake = server.machine.wakeAt.map { max($0, now) }
            guard let next = [nextEvent, nextJob, nextWake].compactMap({ $0 }).min() else { break }
            server.run(for: next - now, now: next)
            now = next
            deliverAnswers()
            if let wake = server.machine.wakeAt, wake <= now {
                server.advance(now: now)
                deliverAnswers()
            }
            while let time = events.nextTime, time <= now, let (_, event) = events.pop() {
                handle(event)
                deliverAnswers()
            }
        }
        return result()
    }

    /// The server's warm-up: the manifest of item `index` asked for as a request, then the next, up to
    /// ``ServeSimulation/Configuration/warmItems``.
    mutating func warm(_ index: Int) {
        warming = nil
        guard index < min(configuration.warmItems, count) else { return }
        if server.cache.contains(.manifest(index)) { return warm(index + 1) }
        warming = (server.request(SimServer.job(for: .manifest(index)), now: now), index)
    }

    mutating func handle(_ event: Event) {
        switch event {
        case .move(let viewer, let index): move(viewer, to: index)
        case .leave(let viewer): leave(viewer)
        case .answered(let id): answered(id)
        case .wake(let viewer, let generation):
            if viewers[viewer]?.generation == generation { progress(viewer) }
        case .tick(let viewer, let generation):
            guard let v = viewers[viewer], v.generation == generation, !v.left else { return }
            let duration = items[v.index].duration
            let playhead = v.firstFrame == nil ? 0 : playhead(v).truncatingRemainder(dividingBy: duration)
            plan(viewer, playhead: (playhead * 1000).rounded() / 1000, moved: false)
            events.push(.tick(viewer: viewer, generation: generation), at: now + Page.atEvery)
        }
    }

    /// The server's answers to jobs: each request waiting for one goes on (a file's manifest first, then the file)
    /// or ends without its bytes.
    mutating func deliverAnswers() {
        while !server.answers.isEmpty {
            let (waiter, _, answer) = server.answers.removeFirst()
            if let warming, warming.waiter == waiter {
                warm(warming.item + 1)
                continue
            }
            guard let id = byWaiter.removeValue(forKey: waiter), requests[id] != nil else { continue }
            requests[id]?.waiter = nil
            if answer == .made {
                serve(id)
            } else {
                errors += 1
                finishRequest(id, read: false)
            }
        }
    }

    // MARK: The server's side (ServeEngine.file, the card lookup)

    /// The server handles request `id`: a fill waits for the item's manifest; an init or a segment needs the
    /// manifest first; a file in the cache is answered after the request's time; otherwise the request waits for
    /// the job that makes what it needs.
    mutating func serve(_ id: Int) {
        guard let request = requests[id] else { return }
        let needed: ServedFile
        switch request.ask {
        case .fill(let i): needed = .manifest(i)
        case .file(let file):
            switch file {
            case .initialization(let i, _), .segment(let i, _, _):
                needed = server.cache.contains(.manifest(i)) ? file : .manifest(i)
            case .manifest, .poster: needed = file
            }
        }
        if server.cache.contains(needed) {
            events.push(.answered(request: id), at: now + configuration.requestSeconds)
            return
        }
        let key = SimServer.job(for: needed)
        let waiter = server.request(key, now: now)
        byWaiter[waiter] = id
        requests[id]?.waiter = (waiter, key)
    }

    /// A viewer's `at`: ViewerHub.move — the position (a move to another item is a swipe), focus, the hit of a move,
    /// and the prefetch wants from the policy, segments of the current item from `playhead` on.
    mutating func plan(_ viewer: Int, playhead: Double, moved: Bool) {
        guard var v = viewers[viewer] else { return }
        if moved { v.position.move(.jump(v.index), at: now) } else { v.position.place(at: v.index) }
        server.focus(viewer: viewer, on: SimServer.folder(v.index), now: now)
        if moved {
            let r = rendition(v.index)
            v.hit = server.cache.contains(.manifest(v.index))
                && server.cache.contains(.segment(v.index, rendition: r, index: 0))
            if v.hit { v.hits += 1 }
        }
        viewers[viewer] = v
        let context = PrefetchContext(current: v.index, feedLength: count, wraps: true, history: v.position.history,
                                      now: now)
        var wants: [JobKey: Int] = [:]
        func want(_ file: ServedFile, _ priority: Int) {
            let key = SimServer.job(for: file)
            wants[key] = max(wants[key] ?? Int.min, priority)
        }
        for request in policy.wanted(in: context) {
            let i = request.index
            guard items.indices.contains(i) else { continue }
            guard server.cache.contains(.manifest(i)) else {
                want(.manifest(i), request.priority)
                continue
            }
            guard request.stage >= .firstFrame else { continue }
            if !server.cache.contains(.poster(i)) { want(.poster(i), request.priority) }
            let r = rendition(i)
            let starts = items[i].segmentStarts
            var from = 0, to = 0
            if case .buffered(let ahead) = request.stage {
                let at = i == v.index ? max(0, playhead) : 0
                from = segment(at: at, starts)
                to = max(from, segment(at: at + max(ahead, configuration.segmentSeconds), starts))
            }
            for k in from...to where k < starts.count && !server.cache.contains(.segment(i, rendition: r, index: k)) {
                want(.segment(i, rendition: r, index: k), request.priority)
            }
        }
        server.want(viewer: viewer, wants, now: now)
    }

    /// The segment `time` falls in (SegmentGrid.index(at:)); past the last start, one past the end.
    func segment(at time: Double, _ starts: [Double]) -> Int {
        (starts.lastIndex { $0 <= time + 1e-4 }) ?? 0
    }

    // MARK: The viewer

    func rendition(_ index: Int) -> Int { items[index].rendition(forBox: configuration.box.width, configuration.box.height) }

    /// The items of the window around `index`, `ahead` forward (wrapping) and `behind` back (stopping at 0),
    /// nearest first, the one ahead before the one behind.
    func around(_ index: Int, ahead: Int, behind: Int) -> [(item: Int, d: Int)] {
        var out: [(Int, Int)] = []
        let reach = max(ahead, behind)
        guard reach > 0 else { return out }
        for d in 1...reach {
            let forward = (index + d) % count
            if d <= ahead, forward != index, !out.contains(where: { $0.0 == forward }) { out.append((forward, d)) }
            let back = index - d
            if d <= behind, back >= 0, !out.contains(where: { $0.0 == back }) { out.append((back, -d)) }
        }
        return out
    }

    /// The attached cards' items around `index`.
    func attached(_ index: Int) -> [(item: Int, d: Int)] {
        around(index, ahead: configuration.ahead, behind: configuration.behind)
    }

    /// The items whose posters are loaded around `index`.
    func posterItems(_ index: Int) -> [(item: Int, d: Int)] {
        around(index, ahead: configuration.posters, behind: configuration.posters)
    }

    /// A move: abandon what falls out of the window, list the card's page, `at`, then what the card needs.
    mutating func move(_ viewer: Int, to index: Int) {
        if viewers[viewer] == nil {
            viewers[viewer] = Viewer(position: FeedPosition(length: count, wraps: true, current: index))
            viewers[viewer]?.position.place(at: index)
        }
        guard var v = viewers[viewer], v.index != index, !v.left else { return }
        if v.index >= 0, v.firstFrame == nil { unfinished += 1 }
        let previous = v.index
        v.generation += 1
        v.index = index
        v.moveTime = now
        v.firstFrame = nil
        v.ready = false
        v.stalled = []
        v.moves += 1
        viewers[viewer] = v
        // 1. Abandon requests outside the window (posters outside the posters' reach) and the previous item's.
        let window = Set([index] + attached(index).map(\.item))
        let posters = Set([index] + posterItems(index).map(\.item))
        for id in requests.keys.sorted() {
            guard let request = requests[id], request.viewer == viewer else { continue }
            let inside = request.ask.isPoster ? posters.contains(request.ask.item) : window.contains(request.ask.item)
            if !inside || (request.ask.item == previous && previous != index) { abandon(id) }
        }
        let kept = viewers[viewer]!.held.filter { file in
            let item = Ask.file(file).item
            if case .poster = file { return posters.contains(item) }
            return window.contains(item)
        }
        viewers[viewer]?.held = kept
        // 2. The card's listing page; 3. `at`.
        list(viewer, index)
        plan(viewer, playhead: 0, moved: true)
        v = viewers[viewer]!
        let r = rendition(index)
        if v.held.contains(.initialization(index, rendition: r)) && v.held.contains(.segment(index, rendition: r, index: 0)) {
            viewers[viewer]?.ready = true
        }
        moveSlot[viewer] = perMove.count
        perMove.append(.init(viewer: viewer, t: now, index: index, item: items[index].name, hit: v.hit, ready: viewers[viewer]!.ready,
                             firstFrameMs: nil))
        events.push(.wake(viewer: viewer, generation: v.generation), at: now + Page.hold)
        events.push(.tick(viewer: viewer, generation: v.generation), at: now + Page.atEvery)
        progress(viewer)
    }

    /// The listing pages up to `index`'s are read: their cards are pending where the server has no manifest yet.
    mutating func list(_ viewer: Int, _ index: Int) {
        guard var v = viewers[viewer] else { return }
        for page in 0...(index / Page.pageSize) where !v.listedPages.contains(page) {
            v.listedPages.insert(page)
            requestCount += 1
            for i in (page * Page.pageSize)..<min(count, (page + 1) * Page.pageSize)
            where !server.cache.contains(.manifest(i)) {
                v.pending.insert(i)
            }
        }
        viewers[viewer] = v
    }

    /// The playhead of `v`'s current item now: from its first frame, stopping at the first unread segment.
    func playhead(_ v: Viewer) -> Double {
        guard v.firstFrame != nil else { return 0 }
        return min(v.playFrom + (now - v.playAt), readEnd(v))
    }

    /// Where what `v` holds of its current item ends: the start of its first unread segment (infinity when it holds
    /// every segment: it loops).
    func readEnd(_ v: Viewer) -> Double {
        let starts = items[v.index].segmentStarts
        let r = rendition(v.index)
        for k in starts.indices where !v.held.contains(.segment(v.index, rendition: r, index: k)) { return starts[k] }
        return .infinity
    }

    /// Whether the current item is short of media: its first frame in, less than SHORT seconds read ahead, and more
    /// segments to read.
    func short(_ v: Viewer) -> Bool {
        guard v.firstFrame != nil else { return false }
        let end = readEnd(v)
        return end.isFinite && end - playhead(v) < Page.short
    }

    /// Asks for `ask` unless the viewer holds it or asked for it: a neighbour's media waits for its turn first.
    mutating func ensure(_ viewer: Int, _ ask: Ask, turn: Bool = false) {
        guard let v = viewers[viewer] else { return }
        if case .file(let file) = ask, v.held.contains(file) { return }
        if case .fill(let i) = ask, v.filled.contains(i) { return }
        guard v.asked[ask] == nil, !v.failedAsks.contains(ask) else { return }
        if !ask.isPoster, v.failedItems.contains(ask.item) { return }
        nextRequest += 1
        requestCount += 1
        let until: Double? = turn && short(v) ? now + Page.turn : nil
        requests[nextRequest] = Request(viewer: viewer, ask: ask, turnUntil: until)
        viewers[viewer]?.asked[ask] = nextRequest
        if let until {
            events.push(.wake(viewer: viewer, generation: v.generation), at: until)
        } else {
            viewers[viewer]?.queue.append(nextRequest)
            dispatch(viewer)
        }
    }

    /// Puts queued requests on the wire while the viewer has a connection free.
    mutating func dispatch(_ viewer: Int) {
        while let v = viewers[viewer], v.wire < Page.connections, !v.queue.isEmpty {
            let id = viewers[viewer]!.queue.removeFirst()
            guard requests[id] != nil else { continue }
            viewers[viewer]?.wire += 1
            requests[id]?.onWire = true
            serve(id)
        }
    }

    /// Request `id` is abandoned (its connection closed; a job it waits for hears the hang-up).
    mutating func abandon(_ id: Int) {
        guard let request = requests.removeValue(forKey: id) else { return }
        viewers[request.viewer]?.asked[request.ask] = nil
        viewers[request.viewer]?.queue.removeAll { $0 == id }
        if request.onWire { viewers[request.viewer]?.wire -= 1 }
        if let (waiter, key) = request.waiter {
            byWaiter[waiter] = nil
            server.hangUp(key, waiter: waiter, now: now)
            server.answers.removeAll { $0.waiter == waiter }
        }
        dispatch(request.viewer)
    }

    /// Request `id` ends: read (its file held, its card filled) or failed.
    mutating func finishRequest(_ id: Int, read: Bool) {
        guard let request = requests.removeValue(forKey: id), var v = viewers[request.viewer] else { return }
        v.asked[request.ask] = nil
        if request.onWire { v.wire -= 1 }
        if !read {
            v.failedAsks.insert(request.ask)
            switch request.ask {
            case .fill(let i), .file(.initialization(let i, _)), .file(.segment(let i, _, 0)): v.failedItems.insert(i)
            default: break
            }
        }
        if read {
            switch request.ask {
            case .fill(let i):
                v.filled.insert(i)
                if i == v.index { cardMs.append((now - v.moveTime) * 1000) }
            case .file(let file):
                if case .poster(let i) = file, i == v.index, !v.held.contains(file) {
                    posterMs.append((now - v.moveTime) * 1000)
                }
                if case .segment(let i, _, let k) = file, i == v.index, v.firstFrame != nil, k > 0 {
                    // The playhead reached this segment before it was read: a stall.
                    let start = items[i].segmentStarts[k]
                    let head = v.playFrom + (now - v.playAt)
                    if head > start + 1e-9, !v.stalled.contains(k) {
                        v.stalled.insert(k)
                        v.stalls += 1
                    }
                    // The playhead runs on from where it stopped.
                    let position = min(head, readEnd(v))
                    v.playFrom = position
                    v.playAt = now
                }
                v.held.insert(file)
            }
        }
        viewers[request.viewer] = v
        dispatch(request.viewer)
        progress(request.viewer)
    }

    mutating func answered(_ id: Int) {
        guard let request = requests[id], viewers[request.viewer]?.left == false else { return }
        finishRequest(id, read: true)
    }

    /// What the viewer asks for next, from what it holds: the current card (poster, fill, init and first segment),
    /// its first frame, the neighbours once it is in (or HOLD passed), later segments as the playhead nears them, and
    /// requests whose turn came.
    mutating func progress(_ viewer: Int) {
        guard var v = viewers[viewer], !v.left, v.index >= 0 else { return }
        let i = v.index
        let r = rendition(i)
        let starts = items[i].segmentStarts
        // 4. The current card.
        if !v.held.contains(.poster(i)) { ensure(viewer, .file(.poster(i))) }
        let whole = !v.pending.contains(i) || v.filled.contains(i)
        if !whole {
            ensure(viewer, .fill(i))
        } else {
            ensure(viewer, .file(.initialization(i, rendition: r)))
            ensure(viewer, .file(.segment(i, rendition: r, index: 0)))
        }
        v = viewers[viewer]!
        if v.firstFrame == nil, v.held.contains(.initialization(i, rendition: r)),
           v.held.contains(.segment(i, rendition: r, index: 0)) {
            let ms = v.ready ? 0 : (now - v.moveTime) * 1000
            v.firstFrame = now
            v.playFrom = 0
            v.playAt = now
            v.firstFrames.append(ms)
            if v.hit { hitMs.append(ms) } else { missMs.append(ms) }
            if let slot = moveSlot[viewer] { perMove[slot].firstFrameMs = ms }
            viewers[viewer] = v
        }
        // 6. Playback: seg-k once seg-(k-1) is read and the playhead reaches start_k - AHEAD.
        if v.firstFrame != nil {
            for k in starts.indices.dropFirst() where !v.held.contains(.segment(i, rendition: r, index: k)) {
                guard v.held.contains(.segment(i, rendition: r, index: k - 1)) else { break }
                let due = starts[k] - Page.ahead
                let head = playhead(v)
                if head + 1e-9 >= due {
                    ensure(viewer, .file(.segment(i, rendition: r, index: k)))
                } else {
                    events.push(.wake(viewer: viewer, generation: v.generation), at: now + (due - head))
                }
                break
            }
        }
        // 5. The neighbours, once the first frame is in, or HOLD after the move.
        v = viewers[viewer]!
        if v.firstFrame != nil || v.failedItems.contains(i) || now >= v.moveTime + Page.hold - 1e-9 {
            for (n, d) in attached(i) {
                ensure(viewer, .file(.poster(n)))
                let card = !v.pending.contains(n) || viewers[viewer]!.filled.contains(n)
                if !card {
                    ensure(viewer, .fill(n))
                    continue
                }
                let rn = rendition(n)
                ensure(viewer, .file(.initialization(n, rendition: rn)), turn: true)
                ensure(viewer, .file(.segment(n, rendition: rn, index: 0)), turn: true)
                guard d > 0 else { continue }
                let held = viewers[viewer]!.held
                guard held.contains(.initialization(n, rendition: rn)) else { continue }
                for (k, start) in items[n].segmentStarts.enumerated() where k > 0 && start < Page.early {
                    if held.contains(.segment(n, rendition: rn, index: k)) { continue }
                    if held.contains(.segment(n, rendition: rn, index: k - 1)) {
                        ensure(viewer, .file(.segment(n, rendition: rn, index: k)), turn: true)
                    }
                    break
                }
            }
            let near = attached(i)
            for (n, _) in posterItems(i) where !near.contains(where: { $0.item == n }) {
                ensure(viewer, .file(.poster(n)))
            }
        }
        // Requests waiting for their turn: on when the current item is no longer short, or their time is up.
        v = viewers[viewer]!
        let isShort = short(v)
        for id in requests.keys.sorted() {
            guard let request = requests[id], request.viewer == viewer, let until = request.turnUntil else { continue }
            if !isShort || now >= until - 1e-9 || request.ask.item == i {
                requests[id]?.turnUntil = nil
                viewers[viewer]?.queue.append(id)
            }
        }
        dispatch(viewer)
    }

    mutating func leave(_ viewer: Int) {
        guard viewers[viewer] != nil else { return }
        for id in requests.keys.sorted() where requests[id]?.viewer == viewer { abandon(id) }
        if viewers[viewer]?.firstFrame == nil { unfinished += 1 }
        viewers[viewer]?.left = true
        server.close(viewer: viewer, now: now)
    }

    // MARK: Figures

    func result() -> ServeSimulation.Result {
        let all = hitMs + missMs
        let moves = viewers.values.reduce(0) { $0 + $1.moves }
        let hits = viewers.values.reduce(0) { $0 + $1.hits }
        let perViewer = viewers.keys.sorted().map { id -> ServeSimulation.ViewerResult in
            let v = viewers[id]!
            return .init(viewer: id, moves: v.moves, firstFrameMs: .init(v.firstFrames),
                         hitRate: v.moves > 0 ? Double(v.hits) / Double(v.moves) : 0, stalls: v.stalls)
        }
        return ServeSimulation.Result(
            moves: moves, firstFrameMs: .init(all), firstFrameMsHit: .init(hitMs), firstFrameMsMiss: .init(missMs),
            hitRate: moves > 0 ? Double(hits) / Double(moves) : 0, cardMs: .init(cardMs), posterMs: .init(posterMs),
            stalls: viewers.values.reduce(0) { $0 + $1.stalls }, unfinished: unfinished, requests: requestCount,
            errors: errors, jobs: server.jobsStarted,
            cpuUse: now > 0 ? server.cpuSeconds / (configuration.cores * now) : 0, peakQueue: server.peakQueue,
            seconds: now, perViewer: perViewer, perMove: perMove)
    }
}
