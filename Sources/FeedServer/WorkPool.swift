import Dispatch
import EngineSupport
import Foundation
import Media
import Prefetch

/// The server's one budget of CPU workers, shared by every viewer and request: the live driver of
/// ``ServeScheduler``.
///
/// Every decision — which job runs when and on which lane, what is dropped or cancelled, how long a failure is
/// remembered — is the scheduler's (its documentation has the rules). This class holds what the pure machine does
/// not: one thread per lane running `perform`, the waiting requests' continuations, each running job's
/// ``CancellationToken``, the errors of remembered failures, and a timer for ``ServeScheduler/wakeAt``. Each public
/// call is one event: under the lock it feeds the machine and takes its actions; after the lock it resumes
/// continuations, wakes lanes and sends reports.
///
/// Thread-safe: all state is under `control`'s lock; each lane is a `ThreadLane` (a dedicated thread).
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
    public typealias JobState = ServeScheduler.JobState

    /// The error a waiter gets when its job was cancelled because nobody wanted it any more (never seen by a
    /// waiter that still waits: a job with a waiter is never cancelled), or when the pool shuts down.
    public struct Cancelled: Error, CustomStringConvertible {
        public var description: String { "cancelled" }
    }

    /// The scheduler's rules.
    public let rules: ServeScheduler.Rules
    /// Notified after each event, once its actions are carried out (a job started, ended, dropped, a waiter
    /// answered): what waits for a job's state waits on it.
    package let changes = ChangeSignal()
    /// The number of worker threads.
    public var workers: Int { rules.workers }
    /// The most workers prefetch-only jobs may hold at once.
    public var prefetchWorkers: Int { rules.prefetchWorkers }
    /// Seconds a failure is remembered.
    public var failureMemory: Double { rules.failureMemory }
    /// How many requests for on-screen items may run in a row ahead of an older request for another item.
    public var focusBurst: Int { rules.focusBurst }
    /// The most wide jobs (``Artifact/isWide``) that run at once.
    public var wideWorkers: Int { rules.wideWorkers }
    /// Seconds at most that a request waits behind an older on-screen request for the wide slot.
    public var holdLimit: Double { rules.holdLimit }
    /// The nice value of the worker threads (0: as the process).
    public let niceness: Int32

    private let now: @Sendable () -> Double
    private let perform: @Sendable (JobKey, CancellationToken) throws -> Void
    private let report: @Sendable (Report) -> Void
    private let control: Locked<Control>
    /// One semaphore per lane: signalled when the lane has a job to take, or the pool stops.
    private let lanes: [ThreadLane]

    /// A job handed to a lane.
    private struct LaneJob {
        let key: JobKey
        let token = CancellationToken()
        var taken = false
    }

    /// The driver's state: the machine and what it does not hold.
    private struct Control {
        var machine: ServeScheduler
        var lanes: [LaneJob?]
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter: UInt64 = 0
        /// The errors of failures the machine remembers.
        var errors: [JobKey: any Error] = [:]
        /// The error each withdrawn item version's waiters get (the latest withdrawals).
        var withdrawals: [String: any Error] = [:]
        /// When the timer set for the machine's ``ServeScheduler/wakeAt`` fires, if one is set.
        var timer: Double?
        var stopped = false
        /// Events fed to the machine, and every action taken when recording (for tests).
        var events = 0
        var log: [ServeScheduler.Action]?
    }

    /// What an event leaves to do once the lock is released.
    private struct Deeds {
        var resumes: [(CheckedContinuation<Void, any Error>, Result<Void, any Error>)] = []
        var reports: [Report] = []
        var wake: [Int] = []
        var timer: Double?
    }

    /// A pool of `workers` threads running `perform` (which makes a job's artifact and stores it, throwing on
    /// failure or cancellation) and telling `report` how each ended. `now` is the scheduler's clock in seconds (a
    /// monotonic clock unless a test says otherwise).
    public init(workers: Int, prefetchWorkers: Int? = nil, wideWorkers: Int = 1, failureMemory: Double = 30,
                niceness: Int32 = 10, focusBurst: Int = 3, holdLimit: Double = 1.5,
                now: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 },
                perform: @escaping @Sendable (JobKey, CancellationToken) throws -> Void,
                report: @escaping @Sendable (Report) -> Void = { _ in }) {
        rules = ServeScheduler.Rules(workers: workers, prefetchWorkers: prefetchWorkers, wideWorkers: wideWorkers,
                                     failureMemory: failureMemory, focusBurst: focusBurst, holdLimit: holdLimit)
        self.niceness = niceness
        self.now = now
        self.perform = perform
        self.report = report
        control = Locked(Control(machine: ServeScheduler(rules: rules),
                                 lanes: Array(repeating: nil, count: rules.workers)))
        // Linux's nice value is per thread, and the decoder's and encoder's own threads inherit it: transcoding
        // yields the CPU to the server's event loop (and to anything else on the machine) when both want it.
        lanes = (0..<rules.workers).map {
            ThreadLane(name: "videofeed-serve-worker-\($0)", nice: niceness > 0 ? niceness : nil)
        }
    }

    /// Waits until `key`'s artifact is made (joining the job in flight or queueing it as the most urgent work).
    /// Cancelling the calling task (a client that disconnects) withdraws this waiter; the job is cancelled when
    /// nobody else wants it.
    /// - Throws: the job's error, a remembered failure, ``Cancelled`` when the task was cancelled.
    public func wait(_ key: JobKey) async throws {
        let id = control.withLock { c -> UInt64 in c.nextWaiter += 1; return c.nextWaiter }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = Task.isCancelled
                event { c in
                    c.waiters[id] = continuation
                    // Cancelled before it waited: answered at once (the answer resumes the continuation).
                    if cancelled { return [.answer(waiter: id, key: key, .cancelled)] }
                    c.machine.request(key, waiter: id, now: now())
                    return c.machine.actions
                }
            }
        } onCancel: {
            event { c in
                c.machine.hangUp(key, waiter: id, now: now())
                return c.machine.actions
            }
        }
    }

    /// Replaces what viewer `viewer` wants made ahead, with a priority each (higher runs first). Jobs it no longer
    /// wants, and that nobody else wants, are dropped or cancelled. Remembered failures are not queued again.
    public func want(viewer: Int, _ wants: [JobKey: Int]) {
        event { c in
            c.machine.want(viewer: viewer, wants, now: now())
            return c.machine.actions
        }
    }

    /// Withdraws every job of the item folder `folder` (an item version nobody can reach any more): queued ones are
    /// dropped and their waiters get `error`; running ones are cancelled, and their waiters get `error` when they
    /// return.
    public func withdraw(folder: String, error: any Error) {
        event { c in
            if c.withdrawals.count >= 256 { c.withdrawals.removeAll() }
            c.withdrawals[folder] = error
            c.machine.withdraw(folder: folder, now: now())
            return c.machine.actions
        }
    }

    /// Says which item viewer `viewer` has on screen: the folder of its current item (as in ``JobKey/folder``), or
    /// nil when it has none (it left). Requests for the files of an item some viewer has on screen run before other
    /// requests.
    public func focus(viewer: Int, on folder: String?) {
        event { c in
            c.machine.focus(viewer: viewer, on: folder, now: now())
            return c.machine.actions
        }
    }

    /// Where `key` stands: queued, being made, or failed recently; nil when no job exists (made, or never asked).
    public func state(of key: JobKey) -> JobState? {
        control.withLock { $0.machine.state(of: key, now: now()) }
    }

    /// Jobs waiting for a worker.
    public var queueDepth: Int { control.withLock { $0.machine.queueDepth } }
    /// Jobs being made.
    public var runningCount: Int { control.withLock { $0.machine.runningCount } }
    /// The job on each lane (for tests).
    var running: [JobKey?] { control.withLock { $0.machine.running } }
    /// Requests waiting for `key` (for tests).
    func waiterCount(_ key: JobKey) -> Int { control.withLock { $0.machine.waiterCount(key) } }
    /// Failures held (remembered ones, and ones past their memory not yet dropped).
    var failuresHeld: Int { control.withLock { $0.machine.failuresHeld } }

    /// Starts recording every action the machine takes (for tests comparing drivers).
    func startRecording() { control.withLock { $0.log = [] } }
    /// The actions recorded, and the number of events fed to the machine so far.
    var recorded: (actions: [ServeScheduler.Action], events: Int) {
        control.withLock { ($0.log ?? [], $0.events) }
    }

    /// Stops the workers after their current jobs (which are cancelled); queued jobs' waiters get ``Cancelled``.
    public func shutdown() {
        event { c in
            c.stopped = true
            c.machine.shutdown()
            return c.machine.actions
        }
        // A lane ends once it holds no job: an idle one at once, a busy one after its job (cancelled, it ends soon and
        // answers its waiters), and a job started just before the stop but handed to its lane after it still runs.
        for (k, lane) in lanes.enumerated() { lane.async { [self] in stopIfIdle(k) } }
    }

    // MARK: - Driving the machine

    /// Runs one event under the lock (`body` feeds the machine and returns its actions), performs the actions, and
    /// after the lock resumes continuations, sends reports, wakes lanes and sets the timer.
    private func event(_ body: (inout Control) -> [ServeScheduler.Action],
                       ended: Outcome? = nil) {
        let deeds = control.withLock { c -> Deeds in
            let actions = body(&c)
            c.events += 1
            c.log?.append(contentsOf: actions)
            var deeds = Deeds()
            for action in actions { carry(action, ended: ended, in: &c, into: &deeds) }
            if let wake = c.machine.wakeAt, !c.stopped, c.timer.map({ wake < $0 }) ?? true {
                c.timer = wake
                deeds.timer = wake
            }
            return deeds
        }
        for r in deeds.reports { report(r) }
        for (continuation, result) in deeds.resumes { continuation.resume(with: result) }
        for lane in deeds.wake { lanes[lane].async { [self] in runJob(on: lane) } }
        if let wake = deeds.timer {
            let delay = max(0, wake - now())
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in self?.timerFired(at: wake) }
        }
        changes.notify()
    }

    /// The timer set for `at` fired: time advanced for the machine.
    private func timerFired(at time: Double) {
        event { c in
            if c.timer == time { c.timer = nil }
            c.machine.advance(now: max(now(), time))
            return c.machine.actions
        }
    }

    /// Performs one action with the lock held; what must wait for the lock's release goes into `deeds`.
    private func carry(_ action: ServeScheduler.Action, ended: Outcome?, in c: inout Control, into deeds: inout Deeds) {
        switch action {
        case .start(let key, let lane):
            c.lanes[lane] = LaneJob(key: key)
            deeds.wake.append(lane)
        case .cancel(let lane):
            c.lanes[lane]?.token.cancel()
        case .answer(let waiter, let key, let answer):
            guard let continuation = c.waiters.removeValue(forKey: waiter) else { return }
            let result: Result<Void, any Error> = switch answer {
            case .made: .success(())
            case .cancelled: .failure(Cancelled())
            case .failed: .failure(c.errors[key] ?? Cancelled())
            case .withdrawn: .failure(c.withdrawals[key.folder] ?? Cancelled())
            }
            deeds.resumes.append((continuation, result))
        case .dropped(let key, let queued):
            deeds.reports.append(Report(key: key, outcome: .cancelled, queued: queued, requested: false))
        case .ended(let key, _, let queued, let requested):
            deeds.reports.append(Report(key: key, outcome: ended ?? .cancelled, queued: queued, requested: requested))
        case .forget(let key):
            c.errors[key] = nil
        }
    }

    /// Ends lane `lane`'s thread when the pool is stopped and the lane holds no job.
    private func stopIfIdle(_ lane: Int) {
        if control.withLock({ $0.stopped && $0.lanes[lane] == nil }) { lanes[lane].stop() }
    }

    /// Runs the job the machine started on `lane`, on the lane's thread, and feeds its end to the machine.
    private func runJob(on lane: Int) {
        let job = control.withLock { c -> LaneJob? in
            guard let job = c.lanes[lane], !job.taken else { return nil }
            c.lanes[lane]?.taken = true
            return job
        }
        guard let job else { return }
        let started = DispatchTime.now().uptimeNanoseconds
        var outcome: Outcome
        do {
            if job.token.isCancelled { throw Cancelled() }
            try perform(job.key, job.token)
            outcome = .made(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        } catch {
            outcome = job.token.isCancelled ? .cancelled : .failed(error)
        }
        let ending: ServeScheduler.Ending = switch outcome {
        case .made: .made
        case .cancelled: .cancelled
        case .failed: .failed
        }
        event({ c in
            c.lanes[lane] = nil
            if case .failed(let error) = outcome { c.errors[job.key] = error }
            c.machine.finish(lane: lane, ending, now: now())
            return c.machine.actions
        }, ended: outcome)
        stopIfIdle(lane)
    }
}
