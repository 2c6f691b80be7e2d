import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The engine's one thread lane: a dedicated thread running blocks in order, with a CPU priority of its own for its
/// whole life. The prefetch scheduler's worker lanes and its control queue, the serving pool's workers (`WorkPool`)
/// and each rendition's encoder thread (`EncoderLane`, with a bounded queue) are lanes.
///
/// Dispatch's shared threads cannot carry a priority: a thread that ran a low-priority job would keep it for the
/// next unrelated block (a priority can be lowered but not raised again without privileges). So each lane is a
/// dedicated thread: background lanes run at nice 10, the lane kept for the item on screen at nice 0
/// (``PrefetchRules/nice(ofLane:)``).
///
/// The control queue is a lane too, and offers ``asyncWithoutPreempting(_:)`` for a swipe's update: on a dispatch queue
/// the woken worker took the swiping thread's core at once, and the swipe's answer waited 1–10 ms behind the update it
/// had just queued (measured: one involuntary context switch inside `async` on every slow hit).
package final class ThreadLane: @unchecked Sendable {
    // All guarded by `condition` (which is what makes the class `@unchecked Sendable`).
    private let condition = NSCondition()
    /// Jobs that may wait at most; ``async(_:)`` blocks while that many do.
    private let capacity: Int
    /// The queue: `jobs[head...]` wait; a slot is emptied as its job is taken, so that the lane holds no job it has
    /// run (a busy lane's queue may not empty for a long time, and a job's captures, such as a picture for an
    /// encoder, would live until it did).
    private var jobs: [(@Sendable () -> Void)?] = []
    private var head = 0
    /// The thread executing a job (the lane's own) or a ``sync(_:)`` body run in place (its caller); nil when idle.
    /// The lane's jobs never overlap with either.
    private var owner: pthread_t?
    private var stopped = false
    /// The kernel's id of the lane's thread, for changing its scheduling policy from another thread.
    private var tid: pid_t = 0

    /// Starts the lane's thread, named `name` for debuggers and `top -H`.
    /// - Parameters:
    ///   - nice: the thread's nice value for its whole life (Linux's is per thread, and threads it starts inherit
    ///     it); nil keeps the creating thread's (an encoder started by a serving worker stays at the worker's).
    ///   - stackSize: the thread's stack in bytes, when the default is not enough (an encoder's).
    ///   - capacity: the most jobs that wait; ``async(_:)`` blocks while that many do, which bounds what a producer
    ///     has in flight. Only the lane's thread makes room, so a job on a bounded lane must not queue work on its
    ///     own lane (nor a ``sync(_:)`` body run in place): with the queue full it would wait for itself.
    package init(name: String, nice: Int32? = nil, stackSize: Int? = nil, capacity: Int = .max) {
        self.capacity = max(1, capacity)
        startThread(name: name, nice: nice, stackSize: stackSize)
    }

    private func startThread(name: String, nice: Int32?, stackSize: Int?) {
        let started = DispatchSemaphore(value: 0)
        // The thread keeps the lane alive until ``stop()`` ends it.
        let thread = Thread { [self] in
            #if os(Linux)
            // On Linux, PRIO_PROCESS with 0 changes only the calling thread.
            if let nice { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) }
            let tid = currentThreadID()
            #else
            let tid: pid_t = 0
            #endif
            condition.lock()
            self.tid = tid
            started.signal()
            while true {
                while !stopped && (owner != nil || head == jobs.count) { condition.wait() }
                if stopped { break }
                var job = jobs[head]
                jobs[head] = nil
                head += 1
                if head == jobs.count { jobs.removeAll(keepingCapacity: true); head = 0 }
                // A producer may wait for room (``capacity``).
                if capacity != .max { condition.broadcast() }
                owner = pthread_self()
                condition.unlock()
                job?()
                // Let go before the lock is taken again: what the job captured may hold the last reference to this
                // lane's owner, whose deinit stops the lane, which takes the lock.
                job = nil
                condition.lock()
                owner = nil
            }
            condition.unlock()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
        // `asyncWithoutPreempting` knows the thread's id from the first call on.
        started.wait()
    }

    /// Runs `job` on this lane's thread after the jobs before it; first waits while ``capacity`` jobs wait. Dropped
    /// once the lane is stopped.
    package func async(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        while !stopped && jobs.count - head >= capacity { condition.wait() }
        if !stopped { jobs.append(job) }
        condition.broadcast()
        condition.unlock()
    }

    /// Like ``async(_:)``, but waking the lane's thread does not take the caller's core from it: the thread is switched
    /// to `SCHED_BATCH` (same nice level, same share of the CPU, no wake-up preemption) before it is woken and back to
    /// `SCHED_OTHER` when `job` starts. It runs at once on an idle core, else when the caller next waits. For work a
    /// latency-sensitive caller queues and must not wait behind (a swipe's update); best effort where the system
    /// refuses the change.
    package func asyncWithoutPreempting(_ job: @escaping @Sendable () -> Void) {
        #if os(Linux)
        condition.lock()
        let tid = self.tid
        condition.unlock()
        guard tid > 0 else { return async(job) }  // 0 would name the caller
        var parameters = sched_param()
        // SCHED_BATCH is 3 and SCHED_OTHER 0 in <sched.h>; Swift does not import the macros under their names here.
        _ = sched_setscheduler(tid, 3, &parameters)
        async {
            var parameters = sched_param()
            _ = sched_setscheduler(0, 0, &parameters)
            job()
        }
        #else
        async(job)
        #endif
    }

    /// Runs `body` after the jobs before it, none overlapping it, and returns its result. Like a dispatch queue's
    /// `sync`, it runs on the caller's thread when the lane is idle (no hand-over to wait for), else as a job on the
    /// lane's thread; in place when called from whatever executes on the lane (so a job may call back into its
    /// owner's synchronous API).
    package func sync<T>(_ body: () -> T) -> T {
        let me = pthread_self()
        condition.lock()
        if let owner, pthread_equal(owner, me) != 0 {
            condition.unlock()
            return body()
        }
        if owner == nil && head == jobs.count && !stopped {
            owner = me
            condition.unlock()
            defer {
                condition.lock()
                owner = nil
                if head < jobs.count { condition.broadcast() }
                condition.unlock()
            }
            return body()
        }
        condition.unlock()
        return withoutActuallyEscaping(body) { body in
            let call = SyncCall(body)
            async { call.run() }
            call.done.wait()
            return call.result!
        }
    }

    /// Jobs queued and not yet started (a `sync` waiting on a busy lane is one). For tests that wait for a call to
    /// be queued instead of sleeping.
    package var queuedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count - head
    }

    /// Whether ``stop()`` was called: the thread ends (or has ended) after its current job, and a ``sync(_:)`` would
    /// wait for ever.
    package var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    /// Ends the thread once its current job returns; queued jobs are dropped, and so is any job queued after. The
    /// dropped jobs are released here: a job that holds the lane's owner would otherwise keep both alive for ever.
    package func stop() {
        condition.lock()
        stopped = true
        let dropped = jobs
        jobs.removeAll()
        head = 0
        condition.broadcast()
        condition.unlock()
        _ = dropped
    }

    /// Ends the thread once every job queued before this call has run.
    package func stopAfterQueued() {
        async { [self] in stop() }
    }
}

/// One ``ThreadLane/sync(_:)`` call: the caller waits on `done` while the lane's thread runs `body`, so the two never
/// touch `body` or `result` at the same time (the semaphore orders them); that is what makes it `@unchecked Sendable`.
/// `body` is let go before `done` is signalled, so it has not escaped when the caller's `withoutActuallyEscaping` ends.
private final class SyncCall<T>: @unchecked Sendable {
    private var body: (() -> T)?
    var result: T?
    let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping () -> T) { self.body = body }

    func run() {
        result = body?()
        body = nil
        done.signal()
    }
}

#if os(Linux)
/// The calling thread's kernel id (glibc's `gettid()`, which Swift does not import here), from `/proc/thread-self`,
/// a link to `<pid>/task/<tid>`; 0 when it cannot be read.
private func currentThreadID() -> pid_t {
    var buffer = [CChar](repeating: 0, count: 64)
    let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard count > 0 else { return 0 }
    let link = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return link.split(separator: "/").last.flatMap { pid_t($0) } ?? 0
}
#endif
