import EngineSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport

/// The engine's one lane type (the prefetch scheduler's lanes and control queue, the serving pool's workers, encoder
/// threads): order, `sync` like a dispatch queue's, a bounded queue, a stop after the queued jobs, and a swipe's
/// wake-up that does not
/// preempt the swiping thread.
@Suite struct ThreadLaneTests {
    /// Blocks the lane until `open()` so that work can be queued behind a running job.
    final class Gate: Sendable {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        func hold() {
            entered.signal()
            release.wait()
        }
        func open() { release.signal() }
    }

    @Test("jobs run in order, and a sync waits for the jobs queued before it")
    func order() throws {
        let lane = ThreadLane(name: "test.order", nice: 0)
        defer { lane.stop() }
        let log = Locked<[Int]>([])
        let gate = Gate()
        lane.async { gate.hold() }
        try #require(gate.entered.wait(timeout: .now() + 30) == .success)
        for i in 0..<5 { lane.async { log.withLock { $0.append(i) } } }
        lane.asyncWithoutPreempting { log.withLock { $0.append(5) } }
        // Busy lane: the sync is queued behind the six jobs (the gate opens once it is), and runs after them.
        let queued = Locked(false)
        let opener = Thread {
            queued.set(waitFor { lane.queuedCount == 7 })
            gate.open()
        }
        opener.start()
        let seen = lane.sync { log.withLock { $0 } }
        #expect(queued.get(), "the sync was not queued behind the six jobs")
        #expect(seen == [0, 1, 2, 3, 4, 5])
    }

    @Test("a bounded lane makes its producer wait while that many jobs wait, and runs them all in order")
    func capacity() throws {
        let lane = ThreadLane(name: "test.capacity", capacity: 2)
        defer { lane.stop() }
        let gate = Gate()
        lane.async { gate.hold() }
        try #require(gate.entered.wait(timeout: .now() + 30) == .success)
        let log = Locked<[Int]>([])
        let submitted = Locked(0)
        let producer = Thread {
            for i in 0..<5 {
                lane.async { log.withLock { $0.append(i) } }
                submitted.withLock { $0 += 1 }
            }
        }
        producer.start()
        // Two wait and the third submission blocks (an event: the count stops at 2 while the gate is shut).
        #expect(waitFor { submitted.get() == 2 && lane.queuedCount == 2 })
        #expect(submitted.get() == 2 && lane.queuedCount == 2)
        gate.open()
        #expect(waitFor { submitted.get() == 5 })
        #expect(lane.sync { log.get() } == [0, 1, 2, 3, 4])
    }

    @Test("stopAfterQueued runs the jobs queued before it, then ends the lane: a job queued after is dropped")
    func stopAfterQueued() throws {
        let lane = ThreadLane(name: "test.stop")
        let gate = Gate()
        lane.async { gate.hold() }
        try #require(gate.entered.wait(timeout: .now() + 30) == .success)
        let log = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        for i in 0..<3 { lane.async { log.withLock { $0.append(i) } } }
        lane.async { done.signal() }
        lane.stopAfterQueued()
        lane.async { log.withLock { $0.append(99) } }
        gate.open()
        #expect(done.wait(timeout: .now() + 30) == .success)
        // The stop is the next job: once it ran, the thread ends without taking the job behind it.
        #expect(waitFor { lane.isStopped })
        #expect(log.get() == [0, 1, 2])
        #expect(lane.queuedCount == 0, "the job queued after the stop is dropped, unrun")
    }

    @Test("an idle lane's sync runs on the caller's thread, and a sync from inside the lane runs in place")
    func syncInPlace() {
        let lane = ThreadLane(name: "test.sync", nice: 0)
        defer { lane.stop() }
        let caller = pthread_self()
        let ranOnCaller = lane.sync { pthread_equal(pthread_self(), caller) != 0 }
        #expect(ranOnCaller)
        // From a job on the lane's thread: a nested sync must not wait for the lane (itself).
        let nested = DispatchSemaphore(value: 0)
        let answer = Locked(0)
        lane.async {
            let inner = lane.sync { 42 }
            answer.set(inner)
            nested.signal()
        }
        #expect(nested.wait(timeout: .now() + 10) == .success)
        #expect(answer.get() == 42)
        // From inside a sync body run in place on the caller: nested again.
        let twice = lane.sync { lane.sync { 7 } }
        #expect(twice == 7)
    }

    @Test("a sync on an idle lane never overlaps a job queued while it runs")
    func syncExcludesJobs() {
        let lane = ThreadLane(name: "test.exclusion", nice: 0)
        defer { lane.stop() }
        let inside = Locked(false)
        let overlapped = Locked(false)
        let done = DispatchSemaphore(value: 0)
        lane.sync {
            inside.set(true)
            lane.async {
                if inside.get() { overlapped.set(true) }
                done.signal()
            }
            Thread.sleep(forTimeInterval: 0.05)
            inside.set(false)
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(!overlapped.get())
    }

    #if os(Linux)
    @Test("a swipe's wake-up: the lane is SCHED_BATCH while the job waits and SCHED_OTHER again when it runs")
    func wakesWithoutPreempting() throws {
        let lane = ThreadLane(name: "test.batch", nice: 0)
        defer { lane.stop() }
        let gate = Gate()
        let tid = Locked<pid_t>(0)
        lane.async {
            tid.set(Self.threadID())
            gate.hold()
        }
        try #require(gate.entered.wait(timeout: .now() + 30) == .success)
        let laneTID = tid.get()
        try #require(laneTID > 0)
        #expect(sched_getscheduler(laneTID) == 0, "a lane runs SCHED_OTHER")
        let policyInJob = Locked<Int32>(-1)
        lane.asyncWithoutPreempting { policyInJob.set(sched_getscheduler(0)) }
        #expect(sched_getscheduler(laneTID) == 3, "SCHED_BATCH while the queued job waits: waking it preempts no one")
        #expect(sched_getscheduler(0) == 0, "the caller's own policy is untouched")
        gate.open()
        lane.sync {}
        #expect(policyInJob.get() == 0, "the job itself runs SCHED_OTHER")
    }

    static func threadID() -> pid_t {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return link.split(separator: "/").last.flatMap { pid_t($0) } ?? 0
    }
    #endif

    /// Signals `released` when deallocated.
    final class Tracked: Sendable {
        let released: DispatchSemaphore
        init(_ released: DispatchSemaphore) { self.released = released }
        deinit { released.signal() }
    }

    @Test("a busy lane holds no job it has run: what a run job captured is let go while later jobs still wait")
    func runJobsAreLetGo() throws {
        let lane = ThreadLane(name: "test.letgo", capacity: 4)
        defer { lane.stop() }
        let released = DispatchSemaphore(value: 0)
        let gate = Gate()
        do {
            let tracked = Tracked(released)
            lane.async { _ = tracked }
        }
        // The lane never empties: the next job blocks with two more queued behind it.
        lane.async { gate.hold() }
        lane.async {}
        lane.async {}
        try #require(gate.entered.wait(timeout: .now() + 30) == .success)
        #expect(released.wait(timeout: .now() + 30) == .success, "the first job's capture is still held")
        gate.open()
    }

    /// Owns a lane and stops it in its deinit, as the prefetch scheduler does.
    final class LaneOwner: Sendable {
        let lane = ThreadLane(name: "test.owner")
        let gone: DispatchSemaphore
        init(_ gone: DispatchSemaphore) { self.gone = gone }
        deinit {
            lane.stop()
            gone.signal()
        }
    }

    @Test("a job holding the last reference to its lane's owner: the owner's deinit, run on the lane's thread, stops the lane without deadlocking it")
    func lastReferenceReleasedOnTheLane() throws {
        let gone = DispatchSemaphore(value: 0)
        let ran = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        do {
            let owner = LaneOwner(gone)
            owner.lane.async { [owner] in
                proceed.wait()
                _ = owner
                ran.signal()
            }
        }
        // Only the job holds the owner now.
        proceed.signal()
        try #require(ran.wait(timeout: .now() + 30) == .success)
        #expect(gone.wait(timeout: .now() + 30) == .success, "the owner's deinit never finished on its lane's thread")
    }
}
