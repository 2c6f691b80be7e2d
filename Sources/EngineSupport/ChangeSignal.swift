import Foundation

/// A signal that some state changed, for a thread that waits until a condition over that state holds.
///
/// The owner of the state calls ``notify()`` after each change; a waiter passes the condition to
/// ``wait(timeout:until:)``, which tests it at once and again after each notification, and returns as soon as it
/// holds: the wait ends at the change that makes it true, with no polling interval. The state stays its owner's, read
/// by the condition through the owner's thread-safe accessors. The signal's lock is a leaf: ``notify()`` may be called
/// with the owner's locks held (it never waits for a waiter), and a condition always runs without the signal's lock.
/// The prefetch scheduler (a frame decoded, a first frame published) and the serving pool (any job's state) each own
/// one.
///
/// A notification costs a lock and a broadcast; with no waiter, nobody wakes.
package final class ChangeSignal: @unchecked Sendable {  // `generation` is read and written only under `condition`'s lock
    private let condition = NSCondition()
    private var generation: UInt64 = 0

    package init() {}

    /// Wakes every waiter to test its condition again. Safe from any thread.
    package func notify() {
        condition.lock()
        generation &+= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks this thread until `holds()` is true, testing it now and after each ``notify()``; false once `timeout`
    /// seconds have passed with it false (at most a year: the bound turns a change that never comes into a false
    /// result, not a hang), however many notifications came meanwhile. `holds` runs on this thread without the
    /// signal's lock, so it may take the owner's locks (and may have effects, such as taking the frame it waits for).
    package func wait(timeout: Double, until holds: () -> Bool) -> Bool {
        let bound = timeout.isNaN ? 0 : min(max(0, timeout), 365 * 86_400)
        let deadline = Date(timeIntervalSinceNow: bound)
        while true {
            condition.lock()
            let seen = generation
            condition.unlock()
            if holds() { return true }
            if Date() >= deadline { return false }
            condition.lock()
            while generation == seen {
                if !condition.wait(until: deadline) {
                    condition.unlock()
                    return holds()
                }
            }
            condition.unlock()
        }
    }

    /// ``wait(timeout:until:)`` for async code (tests): the blocking wait runs on a thread of its own, started for
    /// this call, so the cooperative pool's threads stay free for the work being waited on. Task cancellation does
    /// not end it; the bound does.
    package func wait(timeout: Double, until holds: @escaping @Sendable () -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: self.wait(timeout: timeout, until: holds)) }
            thread.name = "videofeed.change-wait"
            thread.start()
        }
    }
}
