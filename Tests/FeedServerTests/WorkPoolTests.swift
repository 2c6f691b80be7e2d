import EngineSupport
@testable import FeedServer
import Foundation
import Media
import TestSupport
import Testing

/// The shared worker pool's scheduling, with a stand-in `perform` (no media): dedup, urgency, the prefetch share,
/// cancellation of unwanted work, remembered failures. Also the disk cache's LRU and atomic writes.
@Suite struct WorkPoolTests {
    /// A perform that records what ran and blocks each job until released (or cancelled).
    final class Recorder: Sendable {
        let ran = Locked<[JobKey]>([])
        let started = Locked<[JobKey]>([])
        let gate = DispatchSemaphore(value: 0)
        let blocks: Bool
        init(blocks: Bool) { self.blocks = blocks }

        func perform(_ key: JobKey, _ token: CancellationToken) throws {
            started.withLock { $0.append(key) }
            if blocks {
                while gate.wait(timeout: .now() + .milliseconds(5)) == .timedOut {
                    if token.isCancelled { throw MediaError(.cancelled, operation: "test", item: key.folder, message: "") }
                }
            }
            if key.folder.hasPrefix("broken") { throw MediaError(.invalidData, operation: "test", item: key.folder, message: "bad") }
            ran.withLock { $0.append(key) }
        }
    }

    func key(_ folder: String, _ k: Int = 0) -> JobKey { JobKey(folder: folder, artifact: .segment(rendition: 0, index: k)) }

    func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<12_000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("condition not met in 60 s")
    }

    @Test func twoWaitersShareOneRun() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, perform: recorder.perform)
        defer { pool.shutdown() }
        async let a: Void = pool.wait(key("a"))
        async let b: Void = pool.wait(key("a"))
        try await eventually { recorder.started.get().count == 1 }
        recorder.gate.signal()
        _ = try await (a, b)
        #expect(recorder.ran.get() == [key("a")])
    }

    @Test func aWaiterOutranksPrefetchAndPrefetchLeavesAWorkerFree() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, perform: recorder.perform)
        defer { pool.shutdown() }
        // Four prefetch jobs: only one runs (2 workers, prefetch share 1), nearest (highest priority) first.
        pool.want(viewer: 1, [key("n1"): 90, key("n2"): 80, key("n3"): 70, key("n4"): 60])
        try await eventually { recorder.started.get().count == 1 }
        try await Task.sleep(for: .milliseconds(50))
        #expect(recorder.started.get() == [key("n1")])
        // A request takes the free worker at once, ahead of the queued neighbours.
        async let request: Void = pool.wait(key("current"))
        try await eventually { recorder.started.get().count == 2 }
        #expect(recorder.started.get()[1] == key("current"))
        for _ in 0..<5 { recorder.gate.signal() }
        try await request
        try await eventually { recorder.ran.get().count == 5 }
        #expect(Array(recorder.started.get()[2...]) == [key("n2"), key("n3"), key("n4")])
    }

    /// On a cold jump the page asks for the target and its neighbours at once: the request for the item the viewer
    /// is on runs first, the others in the order they came.
    @Test func theViewersCurrentItemRunsBeforeOtherRequests() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 1, perform: recorder.perform)
        defer { pool.shutdown() }
        // GIVEN the one worker busy, the viewer on "target", requests for two neighbours queued before the target's
        async let busy: Void = pool.wait(key("busy"))
        try await eventually { recorder.started.get() == [key("busy")] }
        pool.focus(viewer: 1, on: "target")
        async let n1: Void = pool.wait(key("n1"))
        try await eventually { pool.queueDepth == 1 }
        async let n2: Void = pool.wait(key("n2"))
        try await eventually { pool.queueDepth == 2 }
        async let target: Void = pool.wait(key("target"))
        try await eventually { pool.queueDepth == 3 }
        // WHEN the worker comes free
        for _ in 0..<4 { recorder.gate.signal() }
        _ = try await (busy, n1, n2, target)
        // THEN the target's request runs next, then the neighbours' in order
        #expect(recorder.started.get() == [key("busy"), key("target"), key("n1"), key("n2")])
    }

    /// Twenty viewers arriving together queue each other's first looks: posters (a tenth of a second each) run
    /// before the manifests, inits and segments queued before them; the rest keep the order they came in.
    @Test func postersRunBeforeOtherRequests() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 1, perform: recorder.perform)
        defer { pool.shutdown() }
        // GIVEN the one worker busy, viewers on "a", "b" and "c", and their requests queued in the worst order
        async let busy: Void = pool.wait(key("busy"))
        try await eventually { recorder.started.get() == [key("busy")] }
        for (viewer, folder) in ["a", "b", "c"].enumerated() { pool.focus(viewer: viewer, on: folder) }
        let queued = [key("a"), JobKey(folder: "a", artifact: .initialization(rendition: 0)),
                      JobKey(folder: "b", artifact: .manifest), key("b"),
                      JobKey(folder: "c", artifact: .manifest), JobKey(folder: "b", artifact: .poster),
                      JobKey(folder: "c", artifact: .poster)]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, queuedKey) in queued.enumerated() {
                group.addTask { try await pool.wait(queuedKey) }
                try await eventually { pool.queueDepth == n + 1 }
            }
            // WHEN the worker comes free
            for _ in 0...queued.count { recorder.gate.signal() }
            try await group.waitForAll()
        }
        try await busy
        // THEN the posters, then the rest in the order they came
        #expect(recorder.started.get() == [key("busy"),
                                           JobKey(folder: "b", artifact: .poster), JobKey(folder: "c", artifact: .poster),
                                           key("a"), JobKey(folder: "a", artifact: .initialization(rendition: 0)),
                                           JobKey(folder: "b", artifact: .manifest), key("b"),
                                           JobKey(folder: "c", artifact: .manifest)])
    }

    /// Requests run in the order they were asked for, not the order their jobs were first wanted: a neighbour's
    /// manifest queued ahead by prefetch and asked for later does not pass a request made before it.
    @Test func requestsRunInTheOrderTheyWereAskedFor() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 1, perform: recorder.perform)
        defer { pool.shutdown() }
        // GIVEN the one worker busy and a job a viewer wants ahead
        async let busy: Void = pool.wait(key("busy"))
        try await eventually { recorder.started.get() == [key("busy")] }
        pool.want(viewer: 1, [key("ahead"): 10])
        try await eventually { pool.queueDepth == 1 }
        // WHEN another job is asked for, and then the one wanted ahead
        async let first: Void = pool.wait(key("first"))
        try await eventually { pool.queueDepth == 2 }
        async let second: Void = pool.wait(key("ahead"))
        try await eventually { pool.waiterCount(key("ahead")) == 1 }
        for _ in 0..<3 { recorder.gate.signal() }
        _ = try await (busy, first, second)
        // THEN the one asked for first runs first
        #expect(recorder.started.get() == [key("busy"), key("first"), key("ahead")])
    }

    /// One wide job at a time (every rendition encoded at once): a manifest or a full run, asked for or wanted
    /// ahead, waits for the one running while the free worker takes the next job that is not wide, even one that
    /// came later.
    @Test func wideJobsRunOneAtATime() async throws {
        // Wide jobs block until released; others run at once.
        let gate = DispatchSemaphore(value: 0)
        let started = Locked<[JobKey]>([])
        let wide = Locked((now: 0, most: 0))
        let pool = WorkPool(workers: 2, perform: { key, token in
            started.withLock { $0.append(key) }
            guard key.artifact.isWide else { return }
            wide.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            defer { wide.withLock { $0.now -= 1 } }
            while gate.wait(timeout: .now() + .milliseconds(5)) == .timedOut {
                if token.isCancelled { throw WorkPool.Cancelled() }
            }
        })
        defer { pool.shutdown() }
        let a = JobKey(folder: "a", artifact: .full), b = JobKey(folder: "b", artifact: .manifest)
        let ahead = JobKey(folder: "p", artifact: .manifest)
        // GIVEN a full run being made
        async let first: Void = pool.wait(a)
        try await eventually { started.get() == [a] }
        // WHEN a viewer wants a manifest ahead
        pool.want(viewer: 1, [ahead: 10])
        try await Task.sleep(for: .milliseconds(100))
        // THEN it waits
        #expect(started.get() == [a])
        // WHEN a manifest and then a segment are asked for
        async let second: Void = pool.wait(b)
        try await eventually { pool.queueDepth == 2 }
        try await pool.wait(key("d"))
        // THEN the free worker makes the segment, and the manifest waits for the full run to end
        try await Task.sleep(for: .milliseconds(100))
        #expect(started.get() == [a, key("d")])
        for _ in 0..<3 { gate.signal() }
        try await first
        try await second
        try await eventually { started.get().contains(ahead) && pool.runningCount == 0 }
        #expect(started.get() == [a, key("d"), b, ahead])
        #expect(wide.withLock { $0.most } == 1)
    }

    /// While a request waits for the wide slot, the free worker takes other requests but no prefetch work: the
    /// waiting job gets the CPU it leaves. Once the wide job runs, prefetch goes on.
    @Test func aWideRequestWaitingKeepsTheOtherWorkersOffPrefetch() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, perform: recorder.perform)
        defer { pool.shutdown() }
        let a = JobKey(folder: "a", artifact: .full), b = JobKey(folder: "b", artifact: .full)
        let poster = JobKey(folder: "c", artifact: .poster)
        // GIVEN a full run being made and a request for another one waiting for the wide slot
        async let first: Void = pool.wait(a)
        try await eventually { recorder.started.get() == [a] }
        async let second: Void = pool.wait(b)
        try await eventually { pool.queueDepth == 1 }
        // WHEN a viewer wants a segment ahead
        pool.want(viewer: 1, [key("p"): 10])
        try await Task.sleep(for: .milliseconds(100))
        // THEN the free worker leaves it, but takes a request that comes
        #expect(recorder.started.get() == [a])
        async let third: Void = pool.wait(poster)
        try await eventually { recorder.started.get() == [a, poster] }
        for _ in 0..<4 { recorder.gate.signal() }
        try await first
        try await second
        try await third
        try await eventually { recorder.ran.get().contains(key("p")) }
        let started = recorder.started.get()
        #expect((started.firstIndex(of: b) ?? .max) < (started.firstIndex(of: key("p")) ?? .max))
    }

    /// A request for an on-screen item waiting for the wide slot holds back the requests asked after it (posters
    /// aside): the free worker leaves the CPU to the wide job in front of it, so a card asked for earlier is not
    /// overtaken by segments asked for later.
    @Test func requestsAskedAfterAnOnScreenWideRequestWaitForIt() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, holdLimit: 60, perform: recorder.perform)
        defer { pool.shutdown() }
        let a = JobKey(folder: "a", artifact: .manifest), b = JobKey(folder: "b", artifact: .manifest)
        let poster = JobKey(folder: "d", artifact: .poster)
        // GIVEN a manifest being made, and viewer 1 waiting on screen for the next manifest
        async let first: Void = pool.wait(a)
        try await eventually { recorder.started.get() == [a] }
        pool.focus(viewer: 1, on: "b")
        async let second: Void = pool.wait(b)
        try await eventually { pool.queueDepth == 1 }
        // WHEN segments are asked for after it
        async let third: Void = pool.wait(key("c"))
        try await Task.sleep(for: .milliseconds(100))
        // THEN the free worker leaves them, but takes a poster
        #expect(recorder.started.get() == [a])
        async let fourth: Void = pool.wait(poster)
        try await eventually { recorder.started.get() == [a, poster] }
        // AND once the first manifest is made, the waiting one runs first and the segment after it
        recorder.gate.signal()
        recorder.gate.signal()
        try await eventually { recorder.started.get().count == 4 }
        #expect(Array(recorder.started.get().suffix(2)) == [b, key("c")])
        recorder.gate.signal()
        recorder.gate.signal()
        _ = try await (first, second, third, fourth)
    }

    /// A request held back behind a waiting wide request is let go after `holdLimit` seconds, whether or not the wide
    /// job got its slot: a viewer playing an item must not wait for a whole queue of other items' manifests.
    @Test func aHeldRequestIsLetGoAfterTheHoldLimit() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, holdLimit: 0.3, perform: recorder.perform)
        defer { pool.shutdown() }
        let a = JobKey(folder: "a", artifact: .manifest), b = JobKey(folder: "b", artifact: .manifest)
        // GIVEN a manifest being made and viewer 1 waiting on screen for the next one
        async let first: Void = pool.wait(a)
        try await eventually { recorder.started.get() == [a] }
        pool.focus(viewer: 1, on: "b")
        async let second: Void = pool.wait(b)
        try await eventually { pool.queueDepth == 1 }
        // WHEN a segment is asked for after it, and nothing else happens
        let asked = ContinuousClock.now
        async let third: Void = pool.wait(key("c"))
        // THEN the free worker takes it once its hold ends, with the manifests where they were
        try await eventually { recorder.started.get().count == 2 }
        #expect(ContinuousClock.now - asked >= .milliseconds(250))
        #expect(recorder.started.get() == [a, key("c")])
        for _ in 0..<3 { recorder.gate.signal() }
        _ = try await (first, second, third)
    }

    /// On a miss the viewer waits for its on-screen item's first segment alone: its prefetch of neighbours and of the
    /// item's next segments waits until that is made, while another viewer's prefetch (its own item ready) goes on.
    @Test func aViewersPrefetchWaitsUntilItsOnScreenItemIsMade() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, perform: recorder.perform)
        defer { pool.shutdown() }
        // GIVEN viewer 1 on "target", whose first segment is requested and being made on one worker
        pool.focus(viewer: 1, on: "target")
        async let target: Void = pool.wait(key("target"))
        try await eventually { recorder.started.get() == [key("target")] }
        // WHEN viewer 1 wants its neighbour (nearest, highest priority) and the target's next segment, and viewer 2,
        // whose item is ready, its own neighbour
        pool.want(viewer: 1, [key("n1"): 90, key("target", 1): 95])
        pool.focus(viewer: 2, on: "ready")
        pool.want(viewer: 2, [key("m1"): 10])
        // THEN the free worker takes viewer 2's neighbour, not viewer 1's
        try await eventually { recorder.started.get().count == 2 }
        try await Task.sleep(for: .milliseconds(100))
        #expect(recorder.started.get() == [key("target"), key("m1")])
        recorder.gate.signal()   // m1 or target: whichever the gate lets through first
        recorder.gate.signal()
        try await target
        // AND once the target is made, viewer 1's prefetch runs, by its priorities
        try await eventually { recorder.started.get().count == 3 }
        #expect(recorder.started.get()[2] == key("target", 1))
        recorder.gate.signal()
        try await eventually { recorder.started.get().count == 4 }
        #expect(recorder.started.get()[3] == key("n1"))
        recorder.gate.signal()
        try await eventually { recorder.ran.get().count == 4 }
    }

    /// A stream of requests for on-screen items passes an older request for another item at most `focusBurst` times;
    /// a viewer that leaves no longer ranks its item first.
    @Test func requestsForOtherItemsAreNotStarvedByOnScreenOnes() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 1, focusBurst: 2, perform: recorder.perform)
        defer { pool.shutdown() }
        pool.focus(viewer: 1, on: "target")
        pool.focus(viewer: 2, on: "elsewhere")
        async let busy: Void = pool.wait(key("busy"))
        try await eventually { recorder.started.get() == [key("busy")] }
        async let other: Void = pool.wait(key("other"))
        try await eventually { pool.queueDepth == 1 }
        async let targets: Void = withThrowingTaskGroup(of: Void.self) { group in
            for k in 0..<4 { group.addTask { try await pool.wait(key("target", k)) } }
            try await group.waitForAll()
        }
        try await eventually { pool.queueDepth == 5 }
        for _ in 0..<6 { recorder.gate.signal() }
        _ = try await (busy, other, targets)
        let order = recorder.started.get().map(\.folder)
        #expect(order == ["busy", "target", "target", "other", "target", "target"])

        // The viewer leaves: its item ranks with the rest again (first come, first served).
        pool.focus(viewer: 1, on: nil)
        async let busy2: Void = pool.wait(key("busy", 1))
        try await eventually { recorder.started.get().count == 7 }
        async let other2: Void = pool.wait(key("other", 1))
        try await eventually { pool.queueDepth == 1 }
        async let target2: Void = pool.wait(key("target", 9))
        try await eventually { pool.queueDepth == 2 }
        for _ in 0..<3 { recorder.gate.signal() }
        _ = try await (busy2, other2, target2)
        #expect(Array(recorder.started.get().suffix(2)) == [key("other", 1), key("target", 9)])
    }

    @Test func workNobodyWantsIsDroppedOrCancelled() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, perform: recorder.perform)
        defer { pool.shutdown() }
        pool.want(viewer: 1, [key("old1"): 90, key("old2"): 80])
        try await eventually { pool.state(of: key("old1")) == .working }
        #expect(pool.state(of: key("old2")) == .queued)
        // The viewer flicks on: the running job is cancelled, the queued one dropped, the new one runs.
        pool.want(viewer: 1, [key("new"): 90])
        try await eventually { pool.state(of: key("old1")) == nil && recorder.started.get().contains(key("new")) }
        #expect(pool.state(of: key("old2")) == nil)
        recorder.gate.signal()
        try await eventually { recorder.ran.get() == [key("new")] }
        #expect(!recorder.started.get().contains(key("old2")))
    }

    @Test func anotherViewersInterestKeepsWorkAlive() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 2, perform: recorder.perform)
        defer { pool.shutdown() }
        pool.want(viewer: 1, [key("shared"): 50])
        pool.want(viewer: 2, [key("shared"): 10])
        try await eventually { pool.state(of: key("shared")) == .working }
        pool.want(viewer: 1, [:])
        try await Task.sleep(for: .milliseconds(50))
        #expect(pool.state(of: key("shared")) == .working)
        recorder.gate.signal()
        try await eventually { recorder.ran.get() == [key("shared")] }
    }

    @Test func aCancelledWaiterCancelsItsWork() async throws {
        let recorder = Recorder(blocks: true)
        let pool = WorkPool(workers: 1, perform: recorder.perform)
        defer { pool.shutdown() }
        let waiter = Task { try await pool.wait(key("slow")) }
        try await eventually { pool.state(of: key("slow")) == .working }
        waiter.cancel()
        await #expect(throws: (any Error).self) { try await waiter.value }
        try await eventually { pool.state(of: key("slow")) == nil }
        #expect(recorder.ran.get().isEmpty)
    }

    @Test func failuresAreRememberedNotRetriedOnEverySwipe() async throws {
        let recorder = Recorder(blocks: false)
        let pool = WorkPool(workers: 1, failureMemory: 3600, perform: recorder.perform)
        defer { pool.shutdown() }
        await #expect(throws: MediaError.self) { try await pool.wait(key("broken")) }
        await #expect(throws: MediaError.self) { try await pool.wait(key("broken")) }
        pool.want(viewer: 1, [key("broken"): 10])
        try await Task.sleep(for: .milliseconds(50))
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
