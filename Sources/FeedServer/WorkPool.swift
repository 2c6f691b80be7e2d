import Dispatch
import EngineSupport
import Foundation
import Media

/// What one job makes for one item.
public enum Artifact: Hashable, Sendable, CustomStringConvertible {
    /// The item's listing facts (``ItemManifest``) and every rendition's initialisation segment.
    case manifest
    /// The card's poster image.
    case poster
    /// One rendition's initialisation segment.
    case initialization(rendition: Int)
    /// Media segment `index` of rendition `rendition`.
    case segment(rendition: Int, index: Int)
    /// Media segment `index` of every rendition, from one pass (for native players that read every variant).
    case segments(index: Int)
    /// Every output of a batch run: the fast-start MP4s, the previews, all segments and playlists.
    case full

    public var description: String {
        switch self {
        case .manifest: "manifest"
        case .poster: "poster"
        case .initialization(let r): "init(r\(r))"
        case .segment(let r, let k): "seg(r\(r),\(k))"
        case .segments(let k): "seg(all,\(k))"
        case .full: "full"
        }
    }

    /// The order requests run in when several wait (lower first, then the order they were asked for): posters —
    /// what the viewer sees first, and the cheapest job (a tenth of a second against half a second to a second for a
    /// manifest or a first segment) — before everything else. With 20 viewers arriving together, a poster queued
    /// behind other viewers' first segments waited 5–7 s. (Manifests before segments too was tried: the first
    /// segments then waited behind every new item's manifest, and more requests took over 5 s.)
    var requestRank: Int {
        switch self {
        case .poster: 0
        case .manifest, .initialization, .segment, .segments, .full: 1
        }
    }

    /// Whether the job encodes every rendition at once (a manifest with every first segment, a full run): one x264
    /// encoder per rendition, each holding its look-ahead frames (about 150 MB for the default three renditions),
    /// where a segment job holds one. ``WorkPool/wideWorkers`` bounds how many run together.
    public var isWide: Bool {
        switch self {
        case .manifest, .segments, .full: true
        case .poster, .initialization, .segment: false
        }
    }

    /// What a viewer needs before the item shows: its manifest, poster, an init or the first media segment.
    public var isFirstLook: Bool {
        switch self {
        case .manifest, .poster, .initialization: true
        case .segment(_, let index): index == 0
        case .segments, .full: false
        }
    }
}

/// One unit of work: an artifact of the item whose renditions live in `folder` (``RenditionFolder``).
public struct JobKey: Hashable, Sendable, CustomStringConvertible {
    /// The item's folder in the cache.
    public var folder: String
    /// What to make.
    public var artifact: Artifact

    /// The job making `artifact` for the item in `folder`.
    public init(folder: String, artifact: Artifact) {
        self.folder = folder
        self.artifact = artifact
    }

    public var description: String { "\(folder) \(artifact)" }
}

/// The server's one budget of CPU workers, shared by every viewer and request.
///
/// Jobs are deduplicated by ``JobKey``: two viewers wanting the same segment, or a request arriving while prefetch
/// makes it, share one run. A job is wanted by **waiters** (requests that need its bytes now: the most urgent work)
/// and by **viewers' prefetch interest** (a priority from the prefetch policy). Workers take the most urgent queued
/// job first; prefetch-only jobs run on at most ``prefetchWorkers`` workers at once, so a request for the item on
/// screen never waits behind a full house of neighbours' work. When a job is no longer wanted — its viewers moved on
/// and no request waits — it is dropped from the queue, or cancelled through its ``CancellationToken`` if it runs.
///
/// A viewer's prefetch of other items, and of the on-screen item's later segments, waits while the item it has on
/// screen still lacks its first look (manifest, poster, init or first segment queued or being made): on a miss the
/// viewer waits for that alone.
///
/// Among requests, those for an item a viewer has on screen (``focus(viewer:on:)``) run first — on a cold jump the
/// page asks for the target and its neighbours at once, and the viewer waits for the target — then the others.
/// Within each group posters run first (``Artifact/requestRank``), then the rest, each in the order it was asked for
/// (a job a viewer's prefetch queued earlier takes its place when a request asks for it). A request for another item
/// is passed over by at most ``focusBurst`` focused ones in a row, so a stream of on-screen work cannot starve it.
///
/// At most ``wideWorkers`` wide jobs (``Artifact/isWide``: every rendition encoded at once) run together; the
/// others wait for a slot while the free workers take other jobs, and while a request waits for one, they take no
/// prefetch work (that job then has the CPU they leave). While a request for an on-screen item waits for the slot,
/// they take no request asked after it either (posters aside), for up to ``holdLimit`` seconds each: on a cold start
/// the manifests run one at a time, and the cards asked for first would otherwise wait while segments asked for later
/// took half the CPU. Two wide jobs side by side on two cores take as long as one after the other, and hold twice the
/// memory: with 20 viewers arriving together at an empty cache, the server's peak resident memory went from about 430
/// to 510–550 MiB when every manifest job made every rendition's first segment and two ran at once. (A manifest taken
/// while the slot is busy could make only the inits, from the first frames, as manifests did before: tried, and
/// dropped. Its three encoders hold about as much memory, the peak stayed near 500 MiB, and its item's first segments
/// then cost a decode each: 20–30 swipes in 1,300 found theirs not made, against none.)
///
/// A failed job's error is remembered for ``failureMemory`` seconds and given to whoever asks again in that time, so a
/// broken item is not decoded again on every swipe. After that it is forgotten (a failure may be passing: a job's
/// time limit on a busy machine, a remote source that did not answer), and every failure past its memory is dropped
/// when the next one is remembered, so the pool holds at most the failures of the last ``failureMemory`` seconds.
///
/// Thread-safe: all state is under `state`'s lock; workers are dedicated threads.
public final class WorkPool: Sendable {
    /// How a job ended, for metrics and logs.
    public enum Outcome: Sendable {
        case made(Double)
        case cancelled
        case failed(any Error)
    }

    /// How one job went, for metrics and the debug log.
    public struct Report: Sendable {
        /// The job.
        public var key: JobKey
        /// How it ended.
        public var outcome: Outcome
        /// Seconds it waited for a worker: from when a request asked for it (for a job a request waited for when a
        /// worker took it), else from its first want (a viewer's prefetch); for a job dropped from the queue, to
        /// the drop.
        public var queued: Double
        /// Whether a request waited for it, queued or while it was made (else it was prefetch only); false for a
        /// dropped job.
        public var requested: Bool
    }

    /// Where a job stands, for the debug overlay.
    public enum JobState: String, Sendable {
        case queued, working, failed
    }

    /// The error a waiter gets when its job was cancelled because nobody wanted it any more (never seen by a
    /// waiter that still waits: a job with a waiter is never cancelled), or when the pool shuts down.
    public struct Cancelled: Error, CustomStringConvertible {
        public var description: String { "cancelled" }
    }

    /// The number of worker threads.
    public let workers: Int
    /// The most workers prefetch-only jobs may hold at once.
    public let prefetchWorkers: Int
    /// Seconds a failure is remembered.
    public let failureMemory: Double
    /// The nice value of the worker threads (0: as the process).
    public let niceness: Int32
    /// How many requests for on-screen items may run in a row ahead of an older request for another item.
    public let focusBurst: Int
    /// The most wide jobs (``Artifact/isWide``) that run at once.
    public let wideWorkers: Int
    /// Seconds at most that a request waits behind an older on-screen request for the wide slot.
    public let holdLimit: Double
    /// ``holdLimit`` in nanoseconds.
    private let holdNanoseconds: UInt64

    private let now: @Sendable () -> Double

    private let perform: @Sendable (JobKey, CancellationToken) throws -> Void
    private let report: @Sendable (Report) -> Void
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)

    private final class Job {
        let key: JobKey
        let order: UInt64
        let token = CancellationToken()
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var interest: [Int: Int] = [:]
        /// The pool's counter, and the uptime in nanoseconds, when the job last went from no waiter to one: its
        /// place among requests, and where a request's wait starts. 0 while no request ever waited for it (waiter ids
        /// start at 1).
        var asked: UInt64 = 0
        var askedAt: UInt64 = 0
        var running = false
        /// Uptime in nanoseconds at the job's first want, and when a worker took it.
        let created = DispatchTime.now().uptimeNanoseconds
        var started: UInt64 = 0

        init(key: JobKey, order: UInt64) {
            self.key = key
            self.order = order
        }

        /// Seconds from `created` to `end` (uptime nanoseconds).
        func seconds(to end: UInt64) -> Double { Double(end &- created) / 1e9 }

        /// Seconds it waited for a worker that took it at `start`: from the ask when a request waited then.
        func wait(until start: UInt64, asRequest: Bool) -> Double {
            asRequest && asked != 0 ? Double(start &- askedAt) / 1e9 : seconds(to: start)
        }

        var urgency: Int { waiters.isEmpty ? (interest.values.max() ?? Int.min) : Int.max }
        var wanted: Bool { !waiters.isEmpty || !interest.isEmpty }
    }

    private struct State {
        var jobs: [JobKey: Job] = [:]
        var failures: [JobKey: (error: any Error, time: Double)] = [:]
        var interest: [Int: Set<JobKey>] = [:]
        var counter: UInt64 = 0
        var runningPrefetch = 0
        var runningWide = 0
        var running = 0
        var stopped = false
        /// The folder of each viewer's on-screen item, and how many viewers have each folder on screen.
        var focus: [Int: String] = [:]
        var focused: [String: Int] = [:]
        /// Requests for on-screen items run in a row while a request for another item was queued.
        var passedOver = 0
    }

    /// A pool of `workers` threads running `perform` (which makes a job's artifact and stores it, throwing on
    /// failure or cancellation) and telling `report` how each ended. `now` is the clock failures are remembered by,
    /// in seconds (the wall clock unless a test says otherwise).
    public init(workers: Int, prefetchWorkers: Int? = nil, wideWorkers: Int = 1, failureMemory: Double = 30,
                niceness: Int32 = 10, focusBurst: Int = 3, holdLimit: Double = 1.5,
                now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
                perform: @escaping @Sendable (JobKey, CancellationToken) throws -> Void,
                report: @escaping @Sendable (Report) -> Void = { _ in }) {
        self.workers = max(1, workers)
        self.prefetchWorkers = max(1, min(self.workers, prefetchWorkers ?? (self.workers > 1 ? self.workers - 1 : 1)))
        self.wideWorkers = max(1, min(self.workers, wideWorkers))
        self.failureMemory = failureMemory
        self.niceness = niceness
        self.focusBurst = max(1, focusBurst)
        // At most a day: any longer is "hold until the slot frees", and an infinite limit must not trap below.
        self.holdLimit = min(max(0, holdLimit), 86_400)
        holdNanoseconds = UInt64(self.holdLimit * 1e9)
        self.now = now
        self.perform = perform
        self.report = report
        let niceness = self.niceness
        for n in 0..<self.workers {
            let thread = Thread { [self] in
                // Linux's nice value is per thread, and the decoder's and encoder's own threads inherit it: transcoding
                // yields the CPU to the server's event loop (and to anything else on the machine) when both want it.
                if niceness > 0 { _ = setpriority(__priority_which_t(0), 0, niceness) }
                workerLoop()
            }
            thread.name = "videofeed-serve-worker-\(n)"
            thread.start()
        }
    }

    /// Waits until `key`'s artifact is made (joining the job in flight or queueing it as the most urgent work).
    /// Cancelling the calling task (a client that disconnects) withdraws this waiter; the job is cancelled when
    /// nobody else wants it.
    /// - Throws: the job's error, a remembered failure, ``Cancelled`` when the task was cancelled.
    public func wait(_ key: JobKey) async throws {
        let id = state.withLock { s -> UInt64 in s.counter += 1; return s.counter }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = state.withLock { s in
                    if Task.isCancelled { return .failure(Cancelled()) }
                    if s.stopped { return .failure(Cancelled()) }
                    if let error = remembered(key, in: s, at: now()) { return .failure(error) }
                    let job = job(for: key, in: &s)
                    // A job first wanted ahead (prefetch) queues among requests from when it was asked for.
                    if job.waiters.isEmpty {
                        job.asked = id
                        job.askedAt = DispatchTime.now().uptimeNanoseconds
                    }
                    job.waiters[id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) } else { wake.signal() }
            }
        } onCancel: {
            let (withdrawn, dropped) = state.withLock { s -> (CheckedContinuation<Void, any Error>?, Report?) in
                guard let job = s.jobs[key], let continuation = job.waiters.removeValue(forKey: id) else {
                    return (nil, nil)
                }
                return (continuation, drop(job, ifUnwantedIn: &s))
            }
            if let dropped { report(dropped) }
            withdrawn?.resume(throwing: Cancelled())
        }
    }

    /// Replaces what viewer `viewer` wants made ahead, with a priority each (higher runs first). Jobs it no longer
    /// wants, and that nobody else wants, are dropped or cancelled. Remembered failures are not queued again.
    public func want(viewer: Int, _ wants: [JobKey: Int]) {
        let (woke, dropped) = state.withLock { s -> (Bool, [Report]) in
            let time = now()
            let previous = s.interest[viewer] ?? []
            var kept = Set<JobKey>()
            for (key, priority) in wants {
                if remembered(key, in: s, at: time) != nil { continue }
                let job = job(for: key, in: &s)
                job.interest[viewer] = priority
                kept.insert(key)
            }
            var dropped: [Report] = []
            for key in previous.subtracting(kept) {
                guard let job = s.jobs[key] else { continue }
                job.interest[viewer] = nil
                if let gone = drop(job, ifUnwantedIn: &s) { dropped.append(gone) }
            }
            s.interest[viewer] = kept.isEmpty ? nil : kept
            return (!kept.isEmpty, dropped)
        }
        for gone in dropped { report(gone) }
        if woke { for _ in 0..<workers { wake.signal() } }
    }

    /// Withdraws every job of the item folder `folder` (an item version nobody can reach any more): queued ones are
    /// dropped and their waiters get `error`; running ones are cancelled.
    public func withdraw(folder: String, error: any Error) {
        let (waiters, dropped) = state.withLock { s -> ([CheckedContinuation<Void, any Error>], [Report]) in
            var waiters: [CheckedContinuation<Void, any Error>] = []
            var dropped: [Report] = []
            for job in s.jobs.values where job.key.folder == folder {
                job.token.cancel()
                guard !job.running else { continue }
                waiters += job.waiters.values
                job.waiters = [:]
                for viewer in job.interest.keys { s.interest[viewer]?.remove(job.key) }
                job.interest = [:]
                s.jobs[job.key] = nil
                dropped.append(Report(key: job.key, outcome: .cancelled,
                                      queued: job.seconds(to: DispatchTime.now().uptimeNanoseconds),
                                      requested: false))
            }
            return (waiters, dropped)
        }
        for gone in dropped { report(gone) }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// Says which item viewer `viewer` has on screen: the folder of its current item (as in ``JobKey/folder``), or
    /// nil when it has none (it left). Requests for the files of an item some viewer has on screen run before other
    /// requests.
    public func focus(viewer: Int, on folder: String?) {
        state.withLock { s in
            if let old = s.focus[viewer] {
                let count = (s.focused[old] ?? 1) - 1
                s.focused[old] = count > 0 ? count : nil
            }
            s.focus[viewer] = folder
            if let folder { s.focused[folder, default: 0] += 1 }
        }
    }

    /// Where `key` stands: queued, being made, or failed recently; nil when no job exists (made, or never asked).
    public func state(of key: JobKey) -> JobState? {
        state.withLock { s in
            if let job = s.jobs[key] { return job.running ? .working : .queued }
            return remembered(key, in: s, at: now()) == nil ? nil : .failed
        }
    }

    /// Jobs waiting for a worker.
    public var queueDepth: Int { state.withLock { s in s.jobs.values.count(where: { !$0.running }) } }
    /// Jobs being made.
    public var runningCount: Int { state.withLock { $0.running } }
    /// Requests waiting for `key` (for tests).
    func waiterCount(_ key: JobKey) -> Int { state.withLock { $0.jobs[key]?.waiters.count ?? 0 } }
    /// Failures held (remembered ones, and ones past their memory not yet dropped).
    var failuresHeld: Int { state.withLock { $0.failures.count } }

    /// Stops the workers after their current jobs; queued jobs' waiters get ``Cancelled``.
    public func shutdown() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.stopped = true
            var all: [CheckedContinuation<Void, any Error>] = []
            for job in s.jobs.values {
                job.token.cancel()
                if !job.running {
                    all.append(contentsOf: job.waiters.values)
                    job.waiters = [:]
                }
            }
            s.jobs = s.jobs.filter { $0.value.running }
            return all
        }
        for waiter in waiters { waiter.resume(throwing: Cancelled()) }
        for _ in 0..<workers { wake.signal() }
    }

    // MARK: - Internals (called with the lock held unless said otherwise)

    /// The error of `key`'s failure if it is remembered at `time`.
    private func remembered(_ key: JobKey, in s: State, at time: Double) -> (any Error)? {
        guard let failure = s.failures[key], time - failure.time < failureMemory else { return nil }
        return failure.error
    }

    /// Remembers `key`'s failure at `time`, dropping every failure past its memory.
    private func remember(_ error: any Error, of key: JobKey, in s: inout State, at time: Double) {
        s.failures = s.failures.filter { time - $0.value.time < failureMemory }
        s.failures[key] = (error, time)
    }

    private func job(for key: JobKey, in s: inout State) -> Job {
        if let job = s.jobs[key] { return job }
        s.counter += 1
        let job = Job(key: key, order: s.counter)
        s.jobs[key] = job
        return job
    }

    /// Cancels `job` if it runs and nobody wants it any more, or removes it from the queue; for a removed job, the
    /// report the caller sends once the lock is released.
    private func drop(_ job: Job, ifUnwantedIn s: inout State) -> Report? {
        guard !job.wanted else { return nil }
        if job.running {
            job.token.cancel()
            return nil
        }
        s.jobs[job.key] = nil
        return Report(key: job.key, outcome: .cancelled,
                      queued: job.seconds(to: DispatchTime.now().uptimeNanoseconds), requested: false)
    }

    /// The most urgent queued job a worker may take now, marked running: a request for an on-screen item, else the
    /// first other request (or it, once ``focusBurst`` on-screen requests passed it), else the prefetch job of the
    /// highest priority while the prefetch share has room. Among requests, posters run first
    /// (``Artifact/requestRank``), then the rest, each in the order it was asked for. A wide job is passed over while
    /// ``wideWorkers`` run. With no job, `holdEnds` is when the first request held back behind a waiting wide request
    /// is let go (uptime nanoseconds; nil when none is held): the worker waits until then at most.
    private func next(in s: inout State) -> (job: Job?, holdEnds: UInt64?) {
        var onScreen: Job? = nil, request: Job? = nil, prefetch: Job? = nil
        let wideFull = s.runningWide >= wideWorkers
        // A request for a wide job that waits for the wide slot gets the CPU the other workers leave: they take
        // other requests only, no prefetch.
        func waitsForSlot(_ job: Job) -> Bool { wideFull && job.key.artifact.isWide }
        let wideWaits = s.jobs.values.contains { !$0.running && !$0.waiters.isEmpty && waitsForSlot($0) }
        let prefetchFull = s.runningPrefetch >= prefetchWorkers || wideWaits
        // The oldest request for an on-screen item that waits for the wide slot: requests asked after it wait too
        // (posters aside; each for `holdLimit` at most), so that the wide job it waits behind has the CPU they would
        // take.
        let now = DispatchTime.now().uptimeNanoseconds
        var holdEnds: UInt64? = nil
        let wideAsked = s.jobs.values.filter {
            !$0.running && !$0.waiters.isEmpty && waitsForSlot($0) && s.focused[$0.key.folder] != nil
        }.map(\.asked).min()
        // On-screen items whose first look (manifest, poster, init, first segment) is still queued or being made.
        var unready: Set<String> = []
        for job in s.jobs.values where job.key.artifact.isFirstLook && s.focused[job.key.folder] != nil {
            unready.insert(job.key.folder)
        }
        for job in s.jobs.values where !job.running && !waitsForSlot(job) {
            if !job.waiters.isEmpty {
                if let wideAsked, job.asked > wideAsked, job.key.artifact.requestRank > 0 {
                    let ends = job.askedAt &+ holdNanoseconds
                    if ends > now {
                        holdEnds = min(holdEnds ?? .max, ends)
                        continue
                    }
                }
                if s.focused[job.key.folder] != nil {
                    if onScreen.map({ Self.before(job, $0) }) ?? true { onScreen = job }
                } else if request.map({ Self.before(job, $0) }) ?? true {
                    request = job
                }
            } else if !prefetchFull, !Self.heldBack(job, unready: unready, in: s), prefetch.map({
                        job.urgency > $0.urgency || (job.urgency == $0.urgency && job.order < $0.order) }) ?? true {
                prefetch = job
            }
        }
        let best: Job
        if let onScreen, request != nil, s.passedOver < focusBurst {
            best = onScreen
            s.passedOver += 1
        } else if let job = request ?? onScreen ?? prefetch {
            best = job
            if job === request { s.passedOver = 0 }
        } else {
            return (nil, holdEnds)
        }
        best.running = true
        best.started = DispatchTime.now().uptimeNanoseconds
        s.running += 1
        if best.waiters.isEmpty { s.runningPrefetch += 1 }
        if best.key.artifact.isWide { s.runningWide += 1 }
        return (best, nil)
    }

    /// Whether request `job` runs before request `other`: by ``Artifact/requestRank``, then first come first served —
    /// by when each was asked for, not when it was first wanted ahead: with 20 viewers at a cold feed, the manifests
    /// their neighbours' prefetch queued in the first second were asked for by swipes up to ten seconds later and
    /// went ahead of requests made seconds before them (requests for cards took up to 9.7 s).
    private static func before(_ job: Job, _ other: Job) -> Bool {
        let a = job.key.artifact.requestRank, b = other.key.artifact.requestRank
        return a != b ? a < b : job.asked < other.asked
    }

    /// Whether prefetch job `job` waits because every viewer wanting it has an on-screen item that is not ready yet:
    /// on a miss the viewer waits for that item's first look alone, and on 2 cores a neighbour's job (or the item's
    /// own next segments) beside it would take half the CPU. A preload manager likewise preloads once the current
    /// item is prepared. When the item is ready (or its job failed), the worker that made it takes the rest next.
    private static func heldBack(_ job: Job, unready: Set<String>, in s: State) -> Bool {
        guard !job.interest.isEmpty, !unready.isEmpty else { return false }
        return job.interest.keys.allSatisfy { viewer in
            guard let folder = s.focus[viewer], unready.contains(folder) else { return false }
            return folder != job.key.folder || !job.key.artifact.isFirstLook
        }
    }

    private func workerLoop() {
        while true {
            let (picked, holdEnds) = state.withLock { s -> ((Job, Bool)?, UInt64?) in
                if s.stopped { return (nil, nil) }
                let (job, holdEnds) = next(in: &s)
                guard let job else { return (nil, holdEnds) }
                return ((job, job.waiters.isEmpty), nil)
            }
            guard let (job, prefetch) = picked else {
                if state.withLock({ $0.stopped }) { return }
                // A request held back is let go at its time even if nothing else happens by then.
                if let holdEnds {
                    _ = wake.wait(timeout: DispatchTime(uptimeNanoseconds: holdEnds))
                } else {
                    wake.wait()
                }
                continue
            }
            let started = job.started
            var outcome: Outcome
            do {
                if job.token.isCancelled { throw Cancelled() }
                try perform(job.key, job.token)
                outcome = .made(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
            } catch {
                outcome = job.token.isCancelled ? .cancelled : .failed(error)
            }
            let waiters = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
                s.running -= 1
                if prefetch { s.runningPrefetch -= 1 }
                if job.key.artifact.isWide { s.runningWide -= 1 }
                s.jobs[job.key] = nil
                if case .failed(let error) = outcome { remember(error, of: job.key, in: &s, at: now()) }
                let all = Array(job.waiters.values)
                job.waiters = [:]
                return all
            }
            report(Report(key: job.key, outcome: outcome, queued: job.wait(until: started, asRequest: !prefetch),
                          requested: job.asked != 0))
            for waiter in waiters {
                switch outcome {
                case .made: waiter.resume()
                case .cancelled: waiter.resume(throwing: Cancelled())
                case .failed(let error): waiter.resume(throwing: error)
                }
            }
            // Another worker may now take a prefetch job this one's slot held back.
            wake.signal()
        }
    }
}
