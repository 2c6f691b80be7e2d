/// The serving scheduler's whole state and every change to it: one value type, events in, actions out.
///
/// `videofeed serve` makes each item's files (``Artifact``) on demand and ahead of its viewers. This machine decides
/// which job runs when, on which lane, and who hears how it ended; it holds no threads, files or errors, only their
/// bookkeeping, so two drivers run it: the live server (`WorkPool`: worker threads, HTTP and WebSocket handlers) and
/// PolicyLab's serving simulation in virtual time. Time is an input of every event (seconds on the driver's
/// monotonic clock), never read inside. ``PrefetchStateMachine`` is the same design for the player.
///
/// A driver calls an event, then performs ``actions`` in order (each event starts by forgetting the last one's),
/// and, when ``wakeAt`` is set, calls ``advance(now:)`` at that time even if nothing else happens.
///
/// **Who wants a job.** Jobs are deduplicated by ``JobKey``. A job is wanted by **waiters** (requests that need its
/// bytes now: the most urgent work, ``request(_:waiter:now:)``) and by **viewers' prefetch interest**
/// (``want(viewer:_:now:)``, a priority each from the prefetch policy). When nobody wants a job any more it is dropped
/// from the queue (``Action/dropped(_:queued:)``) or cancelled on its lane (``Action/cancel(lane:)``).
///
/// **Order** (``pick()``): among requests, those for an item some viewer has on screen (``focus(viewer:on:now:)``)
/// first — on a cold jump the page asks for the target and its neighbours at once — then the others; within each,
/// posters first (``Artifact/requestRank``), then the order each was asked for. A request for another item is passed
/// over by at most ``Rules/focusBurst`` on-screen ones in a row. Prefetch-only jobs run by priority (then the order
/// they were first wanted) on at most ``Rules/prefetchWorkers`` lanes, so a request never waits behind a full house of
/// neighbours' work; a viewer's prefetch waits while the item it has on screen still lacks its first look
/// (``Artifact/isFirstLook``).
///
/// **The wide slot.** At most ``Rules/wideWorkers`` wide jobs (``Artifact/isWide``) run together. While a request
/// waits for the slot the other lanes take no prefetch; while a request for an on-screen item waits for it, requests
/// asked after it wait too (posters aside), each for ``Rules/holdLimit`` seconds at most (``wakeAt`` says when the
/// first is let go).
///
/// **Failures** are remembered for ``Rules/failureMemory`` seconds: a request or a want in that time is answered
/// with the failure (``Answer/failed``) without running again; then it is forgotten (``Action/forget(_:)``), and
/// every failure past its memory is forgotten when the next one is remembered.
///
/// Invariants: a key has at most one job; a job is queued or runs on one lane, and a lane runs at most one job; a job
/// with a waiter is never cancelled for want of interest; every waiter is answered exactly once.
public struct ServeScheduler: Sendable {
    /// The knobs of the rules.
    public struct Rules: Sendable, Equatable {
        /// Lanes (worker threads in the live server, CPU lanes in the simulation).
        public var workers: Int
        /// The most lanes prefetch-only jobs hold at once.
        public var prefetchWorkers: Int
        /// The most wide jobs that run at once.
        public var wideWorkers: Int
        /// Seconds a failure is remembered.
        public var failureMemory: Double
        /// How many requests for on-screen items may run in a row ahead of an older request for another item.
        public var focusBurst: Int
        /// Seconds at most that a request waits behind an older on-screen request for the wide slot.
        public var holdLimit: Double

        /// The server's rules for `workers` lanes: prefetch on all but one (one when there is one), one wide slot,
        /// failures remembered for 30 s, bursts of 3, holds of 1.5 s. Out-of-range values are brought into range.
        public init(workers: Int, prefetchWorkers: Int? = nil, wideWorkers: Int = 1, failureMemory: Double = 30,
                    focusBurst: Int = 3, holdLimit: Double = 1.5) {
            self.workers = max(1, workers)
            self.prefetchWorkers = max(1, min(self.workers, prefetchWorkers ?? (self.workers > 1 ? self.workers - 1 : 1)))
            self.wideWorkers = max(1, min(self.workers, wideWorkers))
            self.failureMemory = failureMemory.isFinite ? max(0, failureMemory) : 86_400
            self.focusBurst = max(1, focusBurst)
            // At most a day: any longer is "hold until the slot frees", and an infinite limit must not trap.
            self.holdLimit = holdLimit.isNaN ? 0 : min(max(0, holdLimit), 86_400)
        }
    }

    /// How a waiter's wait ended.
    public enum Answer: Sendable, Equatable {
        /// The artifact is made.
        case made
        /// The job was cancelled (the waiter hung up, or everything stops).
        case cancelled
        /// The job failed now or within ``Rules/failureMemory``: the driver gives the error it holds for the key.
        case failed
        /// The item version was withdrawn (``withdraw(folder:now:)``): the driver gives the error it was told.
        case withdrawn
    }

    /// How a job on a lane ended, as its driver reports it.
    public enum Ending: Sendable, Equatable {
        case made, cancelled, failed
    }

    /// What the driver must do after an event, in order.
    public enum Action: Sendable, Equatable, CustomStringConvertible {
        /// Start making `key` on `lane` (free until now).
        case start(JobKey, lane: Int)
        /// Cancel the job on `lane`: nobody wants it any more, or its item was withdrawn. Its lane frees when it
        /// returns (``finish(lane:_:now:)``).
        case cancel(lane: Int)
        /// Tell `waiter`, which waits for `key`, how its wait ended.
        case answer(waiter: UInt64, key: JobKey, Answer)
        /// The queued job `key` left the queue without running after `queued` seconds (for reports).
        case dropped(JobKey, queued: Double)
        /// The job on `lane` ended: it waited `queued` seconds for its lane (from when a request asked for it when
        /// one did then, else from its first want), and `requested` says whether a request ever waited for it.
        case ended(JobKey, lane: Int, queued: Double, requested: Bool)
        /// The remembered failure of `key` is forgotten: the driver may drop the error it holds.
        case forget(JobKey)

        /// `start a seg(r0,0) lane 1`, `cancel lane 0`, …
        public var description: String {
            switch self {
            case .start(let key, let lane): "start \(key) lane \(lane)"
            case .cancel(let lane): "cancel lane \(lane)"
            case .answer(let waiter, let key, let answer): "answer #\(waiter) \(key) \(answer)"
            case .dropped(let key, _): "drop \(key)"
            case .ended(let key, let lane, _, let requested): "end \(key) lane \(lane)\(requested ? " request" : "")"
            case .forget(let key): "forget \(key)"
            }
        }
    }

    /// Where a job stands, for the debug overlay and the viewer's window.
    public enum JobState: String, Sendable {
        case queued, working, failed
    }

    /// One job's bookkeeping.
    struct Job: Sendable {
        let key: JobKey
        /// Its place in the order jobs were first wanted (unique).
        let order: UInt64
        /// Virtual or real seconds of its first want.
        let created: Double
        var waiters: Set<UInt64> = []
        var interest: [Int: Int] = [:]
        /// The counter and the time when it last went from no waiter to one: its place among requests, and where a
        /// request's wait starts. `asked` is 0 while no request ever waited for it.
        var asked: UInt64 = 0
        var askedAt: Double = 0
        var lane: Int? = nil
        /// Whether it runs for prefetch only (decided when it started), and the seconds it waited for its lane.
        var prefetch = false
        var queued = 0.0
        var cancelled = false
        /// Whether its item version was withdrawn while it ran (its waiters hear ``Answer/withdrawn``).
        var withdrawn = false

        var wanted: Bool { !waiters.isEmpty || !interest.isEmpty }
        var urgency: Int { waiters.isEmpty ? (interest.values.max() ?? Int.min) : Int.max }
        var running: Bool { lane != nil }
    }

    /// The rules this machine applies.
    public let rules: Rules
    /// What the driver must do after the last event, in order.
    public private(set) var actions: [Action] = []
    /// When a request held back for the wide slot is let go, if one is: the driver calls ``advance(now:)`` then.
    public private(set) var wakeAt: Double? = nil

    private(set) var jobs: [JobKey: Job] = [:]
    private var failures: [JobKey: Double] = [:]
    private var interest: [Int: Set<JobKey>] = [:]
    private var lanes: [JobKey?]
    private var counter: UInt64 = 0
    private var runningPrefetch = 0
    private var runningWide = 0
    private var stopped = false
    /// The folder of each viewer's on-screen item, and how many viewers have each folder on screen.
    private var focus: [Int: String] = [:]
    private var focused: [String: Int] = [:]
    /// Requests for on-screen items run in a row while a request for another item was queued.
    private var passedOver = 0

    /// An idle machine with `rules`.
    public init(rules: Rules) {
        self.rules = rules
        lanes = Array(repeating: nil, count: rules.workers)
    }

    // MARK: - Events

    /// Request `waiter` (a number the driver chose, unique among its waiters) needs `key`'s artifact: it joins the
    /// job in flight or queues it as a request; a failure remembered at `now` answers it at once.
    public mutating func request(_ key: JobKey, waiter: UInt64, now: Double) {
        actions = []
        if stopped { actions.append(.answer(waiter: waiter, key: key, .cancelled)); return }
        if remembered(key, at: now) { actions.append(.answer(waiter: waiter, key: key, .failed)); return }
        counter += 1
        let asked = counter
        update(key, now: now) { job in
            // A job first wanted ahead (prefetch) queues among requests from when it was asked for.
            if job.waiters.isEmpty {
                job.asked = asked
                job.askedAt = now
            }
            job.waiters.insert(waiter)
        }
        pump(now: now)
    }

    /// Request `waiter` no longer waits for `key` (its client hung up): it is answered ``Answer/cancelled``, and the
    /// job is dropped or cancelled when nobody else wants it.
    public mutating func hangUp(_ key: JobKey, waiter: UInt64, now: Double) {
        actions = []
        guard var job = jobs[key], job.waiters.remove(waiter) != nil else { return }
        jobs[key] = job
        actions.append(.answer(waiter: waiter, key: key, .cancelled))
        dropIfUnwanted(key, now: now)
        pump(now: now)
    }

    /// Replaces what `viewer` wants made ahead, with a priority each (higher runs first). Jobs it no longer wants,
    /// and that nobody else wants, are dropped or cancelled; remembered failures are not queued again.
    public mutating func want(viewer: Int, _ wants: [JobKey: Int], now: Double) {
        actions = []
        let previous = interest[viewer] ?? []
        var kept = Set<JobKey>()
        if !stopped {
            // In a fixed order: a new job's place among prefetch work depends on it.
            for (key, priority) in wants.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key.description < $1.key.description }) {
                if remembered(key, at: now) { continue }
                update(key, now: now) { $0.interest[viewer] = priority }
                kept.insert(key)
            }
        }
        for key in previous.subtracting(kept).sorted(by: order) {
            guard jobs[key] != nil else { continue }
            jobs[key]?.interest[viewer] = nil
            dropIfUnwanted(key, now: now)
        }
        interest[viewer] = kept.isEmpty ? nil : kept
        pump(now: now)
    }

    /// `viewer` has the item in `folder` on screen, or none (nil: it left). Requests for the files of an item some
    /// viewer has on screen run before other requests, and the viewer's prefetch waits for that item's first look.
    public mutating func focus(viewer: Int, on folder: String?, now: Double) {
        actions = []
        if let old = focus[viewer] {
            let count = (focused[old] ?? 1) - 1
            focused[old] = count > 0 ? count : nil
        }
        focus[viewer] = folder
        if let folder { focused[folder, default: 0] += 1 }
        pump(now: now)
    }

    /// `viewer` is gone: its interest and its focus go with it.
    public mutating func close(viewer: Int, now: Double) {
        focus(viewer: viewer, on: nil, now: now)
        let focusActions = actions
        want(viewer: viewer, [:], now: now)
        actions = focusActions + actions
    }

    /// Every job of the item version in `folder` is withdrawn (nobody can reach it any more): queued ones are dropped
    /// and their waiters answered ``Answer/withdrawn``; running ones are cancelled (their waiters hear when they end).
    public mutating func withdraw(folder: String, now: Double) {
        actions = []
        for key in jobs.keys.filter({ $0.folder == folder }).sorted(by: order) {
            guard var job = jobs[key] else { continue }
            if let lane = job.lane {
                job.withdrawn = true
                if !job.cancelled {
                    job.cancelled = true
                    actions.append(.cancel(lane: lane))
                }
                jobs[key] = job
                continue
            }
            for waiter in job.waiters.sorted() { actions.append(.answer(waiter: waiter, key: key, .withdrawn)) }
            for viewer in job.interest.keys { interest[viewer]?.remove(key) }
            jobs[key] = nil
            actions.append(.dropped(key, queued: now - job.created))
        }
        pump(now: now)
    }

    /// The job on `lane` returned: made, cancelled, or failed (remembered for ``Rules/failureMemory``). Its waiters
    /// are answered, and the lane takes the next job. A job cancelled because nobody wanted it, that a request or a
    /// viewer wanted again before it returned, is queued again rather than answered as cancelled.
    public mutating func finish(lane: Int, _ ending: Ending, now: Double) {
        actions = []
        guard lanes.indices.contains(lane), let key = lanes[lane], let job = jobs[key] else { return }
        lanes[lane] = nil
        if job.prefetch { runningPrefetch -= 1 }
        if key.artifact.isWide { runningWide -= 1 }
        jobs[key] = nil
        if ending == .failed { remember(key, at: now) }
        actions.append(.ended(key, lane: lane, queued: job.queued, requested: job.asked != 0))
        if ending == .cancelled, !stopped, !job.withdrawn, job.wanted {
            var again = job
            again.lane = nil
            again.cancelled = false
            again.prefetch = false
            jobs[key] = again
        } else {
            for viewer in job.interest.keys { interest[viewer]?.remove(key) }
            let answer: Answer = switch ending {
            case _ where job.withdrawn: .withdrawn
            case .made: .made
            case .failed: .failed
            case .cancelled: .cancelled
            }
            for waiter in job.waiters.sorted() { actions.append(.answer(waiter: waiter, key: key, answer)) }
        }
        pump(now: now)
    }

    /// Time passed: requests held back for the wide slot whose hold ended are let go.
    public mutating func advance(now: Double) {
        actions = []
        pump(now: now)
    }

    /// Everything stops: running jobs are cancelled, queued jobs' waiters answered ``Answer/cancelled``, and nothing
    /// starts any more (running jobs still report their end).
    public mutating func shutdown() {
        actions = []
        stopped = true
        wakeAt = nil
        for key in jobs.keys.sorted(by: order) {
            guard var job = jobs[key] else { continue }
            if let lane = job.lane {
                if !job.cancelled {
                    job.cancelled = true
                    jobs[key] = job
                    actions.append(.cancel(lane: lane))
                }
            } else {
                for waiter in job.waiters.sorted() { actions.append(.answer(waiter: waiter, key: key, .cancelled)) }
                jobs[key] = nil
            }
        }
    }

    // MARK: - Queries

    /// Where `key` stands at `now`: queued, being made, or failed recently; nil when no job exists (made, or never
    /// asked).
    public func state(of key: JobKey, now: Double) -> JobState? {
        if let job = jobs[key] { return job.running ? .working : .queued }
        return remembered(key, at: now) ? .failed : nil
    }

    /// Jobs waiting for a lane.
    public var queueDepth: Int { jobs.values.count(where: { !$0.running }) }
    /// Jobs running.
    public var runningCount: Int { lanes.count(where: { $0 != nil }) }
    /// The job on each lane.
    public var running: [JobKey?] { lanes }
    /// Requests waiting for `key`.
    public func waiterCount(_ key: JobKey) -> Int { jobs[key]?.waiters.count ?? 0 }
    /// Failures held (remembered ones, and ones past their memory not yet forgotten).
    public var failuresHeld: Int { failures.count }

    // MARK: - Rules

    /// Whether `key`'s failure is remembered at `now`.
    func remembered(_ key: JobKey, at now: Double) -> Bool {
        guard let time = failures[key] else { return false }
        return now - time < rules.failureMemory
    }

    /// Remembers `key`'s failure at `now`, forgetting every failure past its memory.
    private mutating func remember(_ key: JobKey, at now: Double) {
        for (old, time) in failures.sorted(by: { order($0.key, $1.key) }) where now - time >= rules.failureMemory {
            failures[old] = nil
            actions.append(.forget(old))
        }
        failures[key] = now
    }

    /// The job for `key` (created, in the order of first wants, when there is none) changed by `change`.
    private mutating func update(_ key: JobKey, now: Double, _ change: (inout Job) -> Void) {
        var job: Job
        if let existing = jobs[key] {
            job = existing
        } else {
            counter += 1
            job = Job(key: key, order: counter, created: now)
        }
        change(&job)
        jobs[key] = job
    }

    /// Cancels `key`'s job if it runs and nobody wants it any more, or removes it from the queue.
    private mutating func dropIfUnwanted(_ key: JobKey, now: Double) {
        guard var job = jobs[key], !job.wanted else { return }
        if let lane = job.lane {
            guard !job.cancelled else { return }
            job.cancelled = true
            jobs[key] = job
            actions.append(.cancel(lane: lane))
            return
        }
        jobs[key] = nil
        actions.append(.dropped(key, queued: now - job.created))
    }

    /// Starts jobs on free lanes while ``pick(now:)`` finds one, and sets ``wakeAt``.
    private mutating func pump(now: Double) {
        wakeAt = nil
        guard !stopped else { return }
        while let lane = lanes.firstIndex(where: { $0 == nil }) {
            let (picked, holdEnds) = pick(now: now)
            guard let key = picked, var job = jobs[key] else {
                wakeAt = holdEnds
                return
            }
            job.lane = lane
            job.prefetch = job.waiters.isEmpty
            job.queued = now - (!job.prefetch && job.asked != 0 ? job.askedAt : job.created)
            jobs[key] = job
            lanes[lane] = key
            if job.prefetch { runningPrefetch += 1 }
            if key.artifact.isWide { runningWide += 1 }
            actions.append(.start(key, lane: lane))
        }
    }

    /// The most urgent queued job a lane may take at `now`: a request for an on-screen item, else the first other
    /// request (or it, once ``Rules/focusBurst`` on-screen requests passed it), else the prefetch job of the highest
    /// priority while the prefetch share has room. A wide job is passed over while ``Rules/wideWorkers`` run. With no
    /// job, `holdEnds` is when the first request held back behind a waiting wide request is let go.
    mutating func pick(now: Double) -> (key: JobKey?, holdEnds: Double?) {
        var onScreen: Job? = nil, request: Job? = nil, prefetch: Job? = nil
        let wideFull = runningWide >= rules.wideWorkers
        // A request for a wide job that waits for the wide slot gets the CPU the other lanes leave: they take other
        // requests only, no prefetch.
        func waitsForSlot(_ job: Job) -> Bool { wideFull && job.key.artifact.isWide }
        let queued = jobs.values.filter { !$0.running }
        let wideWaits = queued.contains { !$0.waiters.isEmpty && waitsForSlot($0) }
        let prefetchFull = runningPrefetch >= rules.prefetchWorkers || wideWaits
        // The oldest request for an on-screen item that waits for the wide slot: requests asked after it wait too
        // (posters aside; each for `holdLimit` at most), so that the wide job it waits behind has their CPU.
        var holdEnds: Double? = nil
        let wideAsked = queued.filter {
            !$0.waiters.isEmpty && waitsForSlot($0) && focused[$0.key.folder] != nil
        }.map(\.asked).min()
        // On-screen items whose first look (manifest, poster, init, first segment) is still queued or being made.
        var unready: Set<String> = []
        for job in jobs.values where job.key.artifact.isFirstLook && focused[job.key.folder] != nil {
            unready.insert(job.key.folder)
        }
        for job in queued where !waitsForSlot(job) {
            if !job.waiters.isEmpty {
                if let wideAsked, job.asked > wideAsked, job.key.artifact.requestRank > 0 {
                    let ends = job.askedAt + rules.holdLimit
                    if ends > now {
                        holdEnds = min(holdEnds ?? .infinity, ends)
                        continue
                    }
                }
                if focused[job.key.folder] != nil {
                    if onScreen.map({ Self.before(job, $0) }) ?? true { onScreen = job }
                } else if request.map({ Self.before(job, $0) }) ?? true {
                    request = job
                }
            } else if !prefetchFull, !heldBack(job, unready: unready), prefetch.map({
                        job.urgency > $0.urgency || (job.urgency == $0.urgency && job.order < $0.order) }) ?? true {
                prefetch = job
            }
        }
        if let onScreen, request != nil, passedOver < rules.focusBurst {
            passedOver += 1
            return (onScreen.key, nil)
        }
        if let request {
            passedOver = 0
            return (request.key, nil)
        }
        if let job = onScreen ?? prefetch { return (job.key, nil) }
        return (nil, holdEnds)
    }

    /// Whether request `job` runs before request `other`: by ``Artifact/requestRank``, then first come first served —
    /// by when each was asked for, not when it was first wanted ahead: with 20 viewers at a cold feed, the manifests
    /// their neighbours' prefetch queued in the first second were asked for by swipes up to ten seconds later and
    /// went ahead of requests made seconds before them (requests for cards took up to 9.7 s).
    static func before(_ job: Job, _ other: Job) -> Bool {
        let a = job.key.artifact.requestRank, b = other.key.artifact.requestRank
        return a != b ? a < b : job.asked < other.asked
    }

    /// Whether prefetch job `job` waits because every viewer wanting it has an on-screen item that is not ready yet:
    /// on a miss the viewer waits for that item's first look alone, and on 2 cores a neighbour's job (or the item's
    /// own next segments) beside it would take half the CPU. A preload manager likewise preloads once the current
    /// item is prepared.
    func heldBack(_ job: Job, unready: Set<String>) -> Bool {
        guard !job.interest.isEmpty, !unready.isEmpty else { return false }
        return job.interest.keys.allSatisfy { viewer in
            guard let folder = focus[viewer], unready.contains(folder) else { return false }
            return folder != job.key.folder || !job.key.artifact.isFirstLook
        }
    }

    /// Keys in the order their jobs were first wanted (keys without a job last, by name).
    private func order(_ a: JobKey, _ b: JobKey) -> Bool {
        switch (jobs[a]?.order, jobs[b]?.order) {
        case let (x?, y?): x < y
        case (.some, nil): true
        case (nil, .some): false
        case (nil, nil): a.description < b.description
        }
    }
}
