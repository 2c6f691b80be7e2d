import EngineSupport
@testable import FeedServer
import Foundation
import Media
import Prefetch
import TestSupport
import Testing

/// The live driver of the serving scheduler (WorkPool), with a stand-in `perform` (no media): runs share a job,
/// hang-ups and unwanted work cancel the running job through its token, failures reach waiters with their error,
/// withdrawals with the error given, held requests are let go by the driver's timer. The rules themselves are
/// ServeSchedulerTests' (pure, virtual clock). Also the disk cache's LRU and atomic writes.
@Suite struct WorkPoolTests {
    /// How long a wait may take before the test calls it a hang. Generous because it is wall time, and what these
    /// tests wait for can depend on their own async tasks running: in the whole suite on 2 cores, sync tests waiting on
    /// child processes (the CLI tests' `videofeed play` runs, seen with gdb) held both of Swift's cooperative threads
    /// for about 60 s (the fresh-clone CI run of 37eb08d), so a request made
    /// by an `async let` was not yet made when a 60 s bound ran out, and a stand-in job blocked for 60 s gave up and
    /// let the queued one start.
    static let bound: Double = 600

    /// A perform that records what ran and blocks each job until released (or cancelled). Its own changes (a job
    /// started, ran, released) are signalled on `changes`, which the tests wait on; the pool's on `pool.changes`.
    final class Recorder: Sendable {
        let ran = Locked<[JobKey]>([])
        let started = Locked<[JobKey]>([])
        /// Releases given and not yet taken by a blocked job.
        let releases = Locked(0)
        let changes = ChangeSignal()
        let blocks: Bool
        init(blocks: Bool) { self.blocks = blocks }

        /// Lets one blocked job (or the next to block) go on.
        func release(_ count: Int = 1) {
            releases.withLock { $0 += count }
            changes.notify()
        }

        func perform(_ key: JobKey, _ token: CancellationToken) throws {
            started.withLock { $0.append(key) }
            changes.notify()
            if blocks {
                token.onCancel { [changes] in changes.notify() }
                let released = changes.wait(timeout: WorkPoolTests.bound) {
                    token.isCancelled || releases.withLock { r in
                        guard r > 0 else { return false }
                        r -= 1
                        return true
                    }
                }
                if token.isCancelled || !released {
                    throw MediaError(.cancelled, operation: "test", item: key.folder, message: "")
                }
            }
            if key.folder.hasPrefix("broken") { throw MediaError(.invalidData, operation: "test", item: key.folder, message: "bad") }
            ran.withLock { $0.append(key) }
            changes.notify()
        }
    }

    func key(_ folder: String, _ k: Int = 0) -> JobKey { JobKey(folder: folder, artifact: .segment(rendition: 0, index: k)) }

    @Test func twoWaitersShareOneRun() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, perform: recorder.perform)
        defer { pool.shutdown() }
        async let a: Void = pool.wait(key("a"))
        async let b: Void = pool.wait(key("a"))
        #expect(await recorder.changes.wait(timeout: Self.bound) { recorder.started.get().count == 1 })
        recorder.release()
        _ = try await (a, b)
        #expect(recorder.ran.get() == [key("a")])
    }

    @Test func workNobodyWantsIsDroppedOrCancelled() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, perform: recorder.perform)
        defer { pool.shutdown() }
        pool.want(viewer: 1, [key("old1"): 90, key("old2"): 80])
        let old1 = key("old1"), new = key("new")
        #expect(await pool.changes.wait(timeout: Self.bound) { pool.state(of: old1) == .working })
        #expect(pool.state(of: key("old2")) == .queued)
        // The viewer flicks on: the running job is cancelled, the queued one dropped, the new one runs.
        pool.want(viewer: 1, [key("new"): 90])
        #expect(await recorder.changes.wait(timeout: Self.bound) { recorder.started.get().contains(new) })
        #expect(await pool.changes.wait(timeout: Self.bound) { pool.state(of: old1) == nil })
        #expect(pool.state(of: key("old2")) == nil)
        recorder.release()
        #expect(await recorder.changes.wait(timeout: Self.bound) { recorder.ran.get() == [new] })
        #expect(!recorder.started.get().contains(key("old2")))
    }

    @Test func aCancelledWaiterCancelsItsWork() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 1, perform: recorder.perform)
        defer { pool.shutdown() }
        let waiter = Task { try await pool.wait(key("slow")) }
        let slow = key("slow")
        #expect(await pool.changes.wait(timeout: Self.bound) { pool.state(of: slow) == .working })
        waiter.cancel()
        await #expect(throws: (any Error).self) { try await waiter.value }
        #expect(await pool.changes.wait(timeout: Self.bound) { pool.state(of: slow) == nil })
        #expect(recorder.ran.get().isEmpty)
    }

    @Test func failuresAreRememberedNotRetriedOnEverySwipe() async throws {
        let recorder = Recorder(blocks: false)
        let pool = WorkPool(workers: 1, failureMemory: 3600, perform: recorder.perform)
        defer { pool.shutdown() }
        await #expect(throws: MediaError.self) { try await pool.wait(key("broken")) }
        await #expect(throws: MediaError.self) { try await pool.wait(key("broken")) }
        pool.want(viewer: 1, [key("broken"): 10])
        #expect(pool.queueDepth == 0 && pool.runningCount == 0)
        #expect(recorder.started.get().count == 1)
        #expect(pool.state(of: key("broken")) == .failed)
    }

    @Test func failuresPastTheirMemoryAreDroppedWhenTheNextIsRemembered() async throws {
        let recorder = Recorder(blocks: false)
        let clock = Locked(1000.0)
        let pool = WorkPool(workers: 1, failureMemory: 30, now: { clock.get() }, perform: recorder.perform)
        defer { pool.shutdown() }
        // GIVEN five broken items failing at t=1000 and one at t=1020
        for n in 0..<5 { await #expect(throws: MediaError.self) { try await pool.wait(key("broken-\(n)")) } }
        clock.set(1020)
        await #expect(throws: MediaError.self) { try await pool.wait(key("broken-5")) }
        #expect(pool.failuresHeld == 6)
        // WHEN another fails at t=1031, past the first five's memory
        clock.set(1031)
        await #expect(throws: MediaError.self) { try await pool.wait(key("broken-6")) }
        // THEN only the failures of the last 30 s are held, and a forgotten item is tried again
        #expect(pool.failuresHeld == 2)
        #expect(pool.state(of: key("broken-5")) == .failed && pool.state(of: key("broken-0")) == nil)
        await #expect(throws: MediaError.self) { try await pool.wait(key("broken-0")) }
        #expect(recorder.started.get().count == 8)
    }

    /// A request held back for the wide slot is let go by the driver's timer when its hold ends, with nothing else
    /// happening.
    @Test func theTimerLetsAHeldRequestGo() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, holdLimit: 0.2, perform: recorder.perform)
        defer { pool.shutdown() }
        let a = JobKey(folder: "a", artifact: .manifest), b = JobKey(folder: "b", artifact: .manifest)
        async let first: Void = pool.wait(a)
        #expect(await recorder.changes.wait(timeout: Self.bound) { recorder.started.get() == [a] })
        pool.focus(viewer: 1, on: "b")
        async let second: Void = pool.wait(b)
        #expect(await pool.changes.wait(timeout: Self.bound) { pool.queueDepth == 1 })
        async let third: Void = pool.wait(key("c"))
        #expect(await recorder.changes.wait(timeout: Self.bound) { recorder.started.get().count == 2 })
        #expect(recorder.started.get() == [a, key("c")])
        recorder.release(3)
        _ = try await (first, second, third)
    }

    /// Withdrawn work: a queued waiter gets the error the withdrawal gave, and so does the waiter of a running job
    /// once it returns.
    @Test func withdrawnWaitersGetTheErrorGiven() async throws {
        struct Gone: Error {}
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 1, perform: recorder.perform)
        defer { pool.shutdown() }
        let running = Task { try await pool.wait(key("gone", 0)) }
        let gone0 = key("gone", 0), gone1 = key("gone", 1)
        #expect(await pool.changes.wait(timeout: Self.bound) { pool.state(of: gone0) == .working })
        let queued = Task { try await pool.wait(gone1) }
        #expect(await pool.changes.wait(timeout: Self.bound) { pool.waiterCount(gone1) == 1 })
        pool.withdraw(folder: "gone", error: Gone())
        await #expect(throws: Gone.self) { try await queued.value }
        await #expect(throws: Gone.self) { try await running.value }
    }

    @Test("a shutdown at any moment around a job's start answers its waiter: the job handed to its lane after the stop still runs, cancelled")
    func aShutdownRacingAStartAnswersEveryWaiter() async throws {
        for attempt in 0..<300 {
            let recorder = Recorder(blocks: false)
            let pool = WorkPool(workers: 1, perform: recorder.perform)
            let start = DispatchSemaphore(value: 0)
            // The shutdown on another thread, let go together with the request.
            let stopper = Thread {
                start.wait()
                if attempt % 3 != 0 { usleep(UInt32(attempt % 7) * 20) }
                pool.shutdown()
            }
            stopper.start()
            let waiter = Task { try? await pool.wait(key("race-\(attempt)")) }
            start.signal()
            // Bounded: a waiter never answered fails the test (and is then let go by cancelling it).
            let ended = await withTaskGroup(of: Bool.self) { group in
                group.addTask { await waiter.value; return true }
                group.addTask {
                    try? await Task.sleep(for: .seconds(Self.bound))
                    return false
                }
                let first = await group.next() ?? false
                if !first { waiter.cancel() }
                group.cancelAll()
                return first
            }
            #expect(ended, "attempt \(attempt): the waiter was never answered")
            if !ended { break }
            #expect(await pool.changes.wait(timeout: Self.bound) { pool.runningCount == 0 }, "attempt \(attempt)")
        }
    }

    @Test func cacheEvictsLeastRecentlyUsedAndWritesWhole() throws {
        let root = try TestFixtures.temporaryFolder("serve-lru")
        let cache = try MediaCache(root: root, limit: 10_000)
        try cache.write("a/one.bin", [UInt8](repeating: 1, count: 4000))
        try cache.write("a/two.bin", [UInt8](repeating: 2, count: 4000))
        // Make one.bin the most recently used: two.bin goes first.
        let old = timespec(tv_sec: 1_000_000, tv_nsec: 0)
        var times = [old, old]
        utimensat(AT_FDCWD, root.appendingPathComponent("a/two.bin").path, &times, 0)
        utimensat(AT_FDCWD, root.appendingPathComponent("a/one.bin").path, &times, 0)
        #expect(cache.read("a/one.bin")?.count == 4000)
        try cache.write("b/three.bin", [UInt8](repeating: 3, count: 4000))
        #expect(cache.contains("a/one.bin") && cache.contains("b/three.bin"))
        #expect(!cache.contains("a/two.bin"))
        #expect(cache.bytes <= 9000)
        // No temporary file is left; keys that leave the folder are refused.
        let names = try FileManager.default.subpathsOfDirectory(atPath: root.path)
        #expect(!names.contains { $0.contains(".tmp-") })
        #expect(throws: CacheError.self) { try cache.write("../escape.bin", [1]) }
        #expect(throws: CacheError.self) { try cache.write("a/./x.bin", [1]) }
        #expect(cache.read("../\(root.lastPathComponent)/a/one.bin") == nil)
        // A second cache on the same folder (a replica) sees the files and their total.
        let replica = try MediaCache(root: root, limit: 10_000)
        #expect(replica.bytes == 8000 && replica.read("b/three.bin") == [UInt8](repeating: 3, count: 4000))
    }
}
