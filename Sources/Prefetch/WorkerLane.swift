import EngineSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One worker thread of the prefetch scheduler, with a CPU priority of its own for its whole life.
///
/// Dispatch's shared threads cannot carry a priority: a thread that ran a low-priority job would keep it for the
/// next unrelated block (a priority can be lowered but not raised again without privileges). So each lane is a
/// dedicated thread: background lanes run at nice 10, the lane kept for the item on screen at nice 0
/// (``PrefetchRules/nice(ofLane:)``).
final class WorkerLane: Sendable {
    private let queue = Locked<(jobs: [@Sendable () -> Void], stopped: Bool)>(([], false))
    private let wake = DispatchSemaphore(value: 0)

    init(name: String, nice: Int32) {
        startThread(name: name, nice: nice)
    }

    private func startThread(name: String, nice: Int32) {
        // The thread keeps the lane alive until ``stop()`` ends it.
        let thread = Thread { [self] in
            #if os(Linux)
            // On Linux, PRIO_PROCESS with 0 changes only the calling thread.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
            #endif
            while true {
                wake.wait()
                let next: (@Sendable () -> Void)?? = queue.withLock { q in
                    if q.stopped { return .some(nil) }
                    return q.jobs.isEmpty ? nil : q.jobs.removeFirst()
                }
                switch next {
                case .some(.some(let job)): job()
                case .some(.none): return
                case .none: continue
                }
            }
        }
        thread.name = name
        thread.start()
    }

    /// Runs `job` on this lane's thread after the jobs before it.
    func async(_ job: @escaping @Sendable () -> Void) {
        queue.withLock { $0.jobs.append(job) }
        wake.signal()
    }

    /// Ends the thread once its current job returns; queued jobs are dropped.
    func stop() {
        queue.withLock { $0.stopped = true }
        wake.signal()
    }
}
