import Prefetch
import Testing

/// The serving scheduler's rules as pure functions of its events, on a virtual clock: dedup, order, urgency, focus,
/// the prefetch share, the wide slot and its holds, the starvation bound, cancellation of unwanted work, withdrawal,
/// failure memory. No thread, no sleep: each test feeds events and reads the actions.
@Suite struct ServeSchedulerTests {
    /// A machine with a clock and a log of every action, and helpers naming jobs by key.
    struct Bench {
        var machine: ServeScheduler
        var now = 1000.0
        var log: [ServeScheduler.Action] = []
        var nextWaiter: UInt64 = 0

        init(workers: Int, focusBurst: Int = 3, holdLimit: Double = 1.5, failureMemory: Double = 30) {
            machine = ServeScheduler(rules: .init(workers: workers, failureMemory: failureMemory,
                                                  focusBurst: focusBurst, holdLimit: holdLimit))
        }

        /// Every key started so far, in order.
        var started: [JobKey] { log.compactMap { if case .start(let key, _) = $0 { key } else { nil } } }
        /// Answers given so far, by waiter.
        var answers: [UInt64: ServeScheduler.Answer] {
            var all: [UInt64: ServeScheduler.Answer] = [:]
            for case .answer(let waiter, _, let answer) in log { all[waiter] = answer }
            return all
        }
        var cancelledLanes: [Int] { log.compactMap { if case .cancel(let lane) = $0 { lane } else { nil } } }
        var dropped: [JobKey] { log.compactMap { if case .dropped(let key, _) = $0 { key } else { nil } } }

        mutating func take() { log += machine.actions }

        @discardableResult
        mutating func request(_ key: JobKey) -> UInt64 {
            nextWaiter += 1
            machine.request(key, waiter: nextWaiter, now: now)
            take()
            return nextWaiter
        }
        mutating func hangUp(_ key: JobKey, _ waiter: UInt64) { machine.hangUp(key, waiter: waiter, now: now); take() }
        mutating func want(_ viewer: Int, _ wants: [JobKey: Int]) { machine.want(viewer: viewer, wants, now: now); take() }
        mutating func focus(_ viewer: Int, _ folder: String?) { machine.focus(viewer: viewer, on: folder, now: now); take() }
        mutating func advance(to time: Double) { now = time; machine.advance(now: now); take() }
        mutating func withdraw(_ folder: String) { machine.withdraw(folder: folder, now: now); take() }
        /// The job `key` running on its lane ends with `ending`.
        mutating func finish(_ key: JobKey, _ ending: ServeScheduler.Ending = .made) {
            guard let lane = machine.running.firstIndex(of: key) else {
                Issue.record("\(key) is not running: \(machine.running)")
                return
            }
            machine.finish(lane: lane, ending, now: now)
            take()
        }
    }

    static func key(_ folder: String, _ k: Int = 0) -> JobKey {
        JobKey(folder: folder, artifact: .segment(rendition: 0, index: k))
    }
    func key(_ folder: String, _ k: Int = 0) -> JobKey { Self.key(folder, k) }

    @Test func twoWaitersShareOneRun() {
        var b = Bench(workers: 2)
        let w1 = b.request(key("a")), w2 = b.request(key("a"))
        #expect(b.started == [key("a")])
        b.finish(key("a"))
        #expect(b.answers == [w1: .made, w2: .made])
        #expect(b.machine.queueDepth == 0 && b.machine.runningCount == 0)
    }

    @Test func aWaiterOutranksPrefetchAndPrefetchLeavesALaneFree() {
        var b = Bench(workers: 2)
        // Four prefetch jobs: only one runs (2 lanes, prefetch share 1), nearest (highest priority) first.
        b.want(1, [key("n1"): 90, key("n2"): 80, key("n3"): 70, key("n4"): 60])
        #expect(b.started == [key("n1")])
        // A request takes the free lane at once, ahead of the queued neighbours.
        let w = b.request(key("current"))
        #expect(b.started == [key("n1"), key("current")])
        b.finish(key("current"))
        #expect(b.answers[w] == .made)
        #expect(b.started.count == 2)          // the prefetch share is still full
        b.finish(key("n1"))
        b.finish(key("n2"))
        b.finish(key("n3"))
        #expect(Array(b.started.dropFirst(2)) == [key("n2"), key("n3"), key("n4")])
    }

    /// On a cold jump the page asks for the target and its neighbours at once: the request for the item the viewer
    /// is on runs first, the others in the order they came.
    @Test func theViewersCurrentItemRunsBeforeOtherRequests() {
        var b = Bench(workers: 1)
        b.request(key("busy"))
        b.focus(1, "target")
        b.request(key("n1"))
        b.request(key("n2"))
        b.request(key("target"))
        for k in ["busy", "target", "n1"] { b.finish(key(k)) }
        #expect(b.started == [key("busy"), key("target"), key("n1"), key("n2")])
    }

    /// Viewers arriving together queue each other's first looks: posters run before the manifests, inits and
    /// segments queued before them; the rest keep the order they came in.
    @Test func postersRunBeforeOtherRequests() {
        var b = Bench(workers: 1)
        b.request(key("busy"))
        for (viewer, folder) in ["a", "b", "c"].enumerated() { b.focus(viewer, folder) }
        let queued = [key("a"), JobKey(folder: "a", artifact: .initialization(rendition: 0)),
                      JobKey(folder: "b", artifact: .manifest), key("b"),
                      JobKey(folder: "c", artifact: .manifest), JobKey(folder: "b", artifact: .poster),
                      JobKey(folder: "c", artifact: .poster)]
        for k in queued { b.request(k) }
        b.finish(key("busy"))
        while let running = b.machine.running.compactMap({ $0 }).first { b.finish(running) }
        #expect(b.started == [key("busy"),
                              JobKey(folder: "b", artifact: .poster), JobKey(folder: "c", artifact: .poster),
                              key("a"), JobKey(folder: "a", artifact: .initialization(rendition: 0)),
                              JobKey(folder: "b", artifact: .manifest), key("b"),
                              JobKey(folder: "c", artifact: .manifest)])
    }

    /// Requests run in the order they were asked for, not the order their jobs were first wanted.
    @Test func requestsRunInTheOrderTheyWereAskedFor() {
        var b = Bench(workers: 1)
        b.request(key("busy"))
        b.want(1, [key("ahead"): 10])
        b.request(key("first"))
        b.request(key("ahead"))
        b.finish(key("busy"))
        b.finish(key("first"))
        #expect(b.started == [key("busy"), key("first"), key("ahead")])
    }

    /// One wide job at a time: a manifest or a full run, asked for or wanted ahead, waits for the one running while
    /// the free lane takes the next job that is not wide, even one that came later.
    @Test func wideJobsRunOneAtATime() {
        var b = Bench(workers: 2)
        let a = JobKey(folder: "a", artifact: .full), m = JobKey(folder: "b", artifact: .manifest)
        let ahead = JobKey(folder: "p", artifact: .manifest)
        b.request(a)
        b.want(1, [ahead: 10])
        #expect(b.started == [a])
        b.request(m)
        b.request(key("d"))
        #expect(b.started == [a, key("d")])
        b.finish(key("d"))
        #expect(b.started == [a, key("d")])
        b.finish(a)
        #expect(b.started == [a, key("d"), m])
        b.finish(m)
        #expect(b.started == [a, key("d"), m, ahead])
    }

    /// While a request waits for the wide slot, the free lane takes other requests but no prefetch work.
    @Test func aWideRequestWaitingKeepsTheOtherLanesOffPrefetch() {
        var b = Bench(workers: 2)
        let a = JobKey(folder: "a", artifact: .full), wide = JobKey(folder: "b", artifact: .full)
        let poster = JobKey(folder: "c", artifact: .poster)
        b.request(a)
        b.request(wide)
        b.want(1, [key("p"): 10])
        #expect(b.started == [a])
        b.request(poster)
        #expect(b.started == [a, poster])
        b.finish(poster)
        #expect(b.started == [a, poster])
        b.finish(a)
        #expect(b.started == [a, poster, wide, key("p")])
    }

    /// A request for an on-screen item waiting for the wide slot holds back the requests asked after it (posters
    /// aside) until the slot frees, then runs first.
    @Test func requestsAskedAfterAnOnScreenWideRequestWaitForIt() {
        var b = Bench(workers: 2, holdLimit: 60)
        let a = JobKey(folder: "a", artifact: .manifest), m = JobKey(folder: "b", artifact: .manifest)
        let poster = JobKey(folder: "d", artifact: .poster)
        b.request(a)
        b.focus(1, "b")
        b.request(m)
        b.request(key("c"))
        #expect(b.started == [a])
        #expect(b.machine.wakeAt == 1060)
        b.request(poster)
        #expect(b.started == [a, poster])
        b.finish(a)
        b.finish(poster)
        #expect(b.started == [a, poster, m, key("c")])
    }

    /// A held request is let go when its hold ends, whether or not the wide job got its slot: the machine says when
    /// (`wakeAt`) and starts it when time reaches it.
    @Test func aHeldRequestIsLetGoAfterTheHoldLimit() {
        var b = Bench(workers: 2, holdLimit: 0.3)
        let a = JobKey(folder: "a", artifact: .manifest), m = JobKey(folder: "b", artifact: .manifest)
        b.request(a)
        b.focus(1, "b")
        b.request(m)
        b.advance(to: 1000.1)
        b.request(key("c"))
        #expect(b.started == [a])
        #expect(b.machine.wakeAt == 1000.4)
        b.advance(to: 1000.39)
        #expect(b.started == [a])
        b.advance(to: 1000.4)
        #expect(b.started == [a, key("c")])
        #expect(b.machine.wakeAt == nil)
    }

    /// On a miss the viewer waits for its on-screen item's first segment alone: its prefetch waits until that is
    /// made, while another viewer's prefetch (its own item ready) goes on.
    @Test func aViewersPrefetchWaitsUntilItsOnScreenItemIsMade() {
        var b = Bench(workers: 2)
        b.focus(1, "target")
        b.request(key("target"))
        b.want(1, [key("n1"): 90, key("target", 1): 95])
        b.focus(2, "ready")
        b.want(2, [key("m1"): 10])
        #expect(b.started == [key("target"), key("m1")])
        b.finish(key("m1"))
        #expect(b.started == [key("target"), key("m1")])
        b.finish(key("target"))
        #expect(b.started == [key("target"), key("m1"), key("target", 1)])
        b.finish(key("target", 1))
        #expect(b.started.last == key("n1"))
    }

    /// A stream of requests for on-screen items passes an older request for another item at most `focusBurst`
    /// times; a viewer that leaves no longer ranks its item first.
    @Test func requestsForOtherItemsAreNotStarvedByOnScreenOnes() {
        var b = Bench(workers: 1, focusBurst: 2)
        b.focus(1, "target")
        b.focus(2, "elsewhere")
        b.request(key("busy"))
        b.request(key("other"))
        for k in 0..<4 { b.request(key("target", k)) }
        while let running = b.machine.running.compactMap({ $0 }).first { b.finish(running) }
        #expect(b.started.map(\.folder) == ["busy", "target", "target", "other", "target", "target"])

        b.focus(1, nil)
        b.request(key("busy", 1))
        b.request(key("other", 1))
        b.request(key("target", 9))
        while let running = b.machine.running.compactMap({ $0 }).first { b.finish(running) }
        #expect(Array(b.started.suffix(2)) == [key("other", 1), key("target", 9)])
    }

    @Test func workNobodyWantsIsDroppedOrCancelled() {
        var b = Bench(workers: 2)
        b.want(1, [key("old1"): 90, key("old2"): 80])
        #expect(b.machine.state(of: key("old1"), now: b.now) == .working)
        #expect(b.machine.state(of: key("old2"), now: b.now) == .queued)
        // The viewer flicks on: the running job is cancelled, the queued one dropped; the new one waits for the
        // cancelled job's lane (the prefetch share is one lane).
        b.want(1, [key("new"): 90])
        #expect(b.cancelledLanes == [0])
        #expect(b.dropped == [key("old2")])
        #expect(b.started == [key("old1")])
        b.finish(key("old1"), .cancelled)
        #expect(b.started == [key("old1"), key("new")])
        #expect(b.machine.state(of: key("old1"), now: b.now) == nil)
    }

    @Test func anotherViewersInterestKeepsWorkAlive() {
        var b = Bench(workers: 2)
        b.want(1, [key("shared"): 50])
        b.want(2, [key("shared"): 10])
        b.want(1, [:])
        #expect(b.cancelledLanes.isEmpty)
        #expect(b.machine.state(of: key("shared"), now: b.now) == .working)
        b.want(2, [:])
        #expect(b.cancelledLanes == [0])
    }

    /// A waiter that hangs up is answered `cancelled` and its job, wanted by nobody else, is cancelled; a job
    /// cancelled that a request wants again before it returns is queued again, not answered as cancelled.
    @Test func aHungUpWaiterCancelsItsWorkAndAJobWantedAgainRunsAgain() {
        var b = Bench(workers: 1)
        let w1 = b.request(key("slow"))
        b.hangUp(key("slow"), w1)
        #expect(b.answers[w1] == .cancelled)
        #expect(b.cancelledLanes == [0])
        let w2 = b.request(key("slow"))
        b.finish(key("slow"), .cancelled)
        #expect(b.answers[w2] == nil)
        #expect(b.started == [key("slow"), key("slow")])
        b.finish(key("slow"))
        #expect(b.answers[w2] == .made)
    }

    @Test func failuresAreRememberedNotRetriedOnEverySwipe() {
        var b = Bench(workers: 1, failureMemory: 3600)
        let w1 = b.request(key("broken"))
        b.finish(key("broken"), .failed)
        #expect(b.answers[w1] == .failed)
        let w2 = b.request(key("broken"))
        #expect(b.answers[w2] == .failed)
        b.want(1, [key("broken"): 10])
        #expect(b.started.count == 1)
        #expect(b.machine.state(of: key("broken"), now: b.now) == .failed)
        b.advance(to: b.now + 3600)
        #expect(b.machine.state(of: key("broken"), now: b.now) == nil)
    }

    @Test func failuresPastTheirMemoryAreForgottenWhenTheNextIsRemembered() {
        var b = Bench(workers: 1, failureMemory: 30)
        for n in 0..<5 {
            b.request(key("broken-\(n)"))
            b.finish(key("broken-\(n)"), .failed)
        }
        b.advance(to: 1020)
        b.request(key("broken-5"))
        b.finish(key("broken-5"), .failed)
        #expect(b.machine.failuresHeld == 6)
        b.advance(to: 1031)
        b.request(key("broken-6"))
        b.finish(key("broken-6"), .failed)
        #expect(b.machine.failuresHeld == 2)
        let forgotten = b.log.compactMap { if case .forget(let key) = $0 { key } else { nil } }
        #expect(Set(forgotten) == Set((0..<5).map { key("broken-\($0)") }))
        #expect(b.machine.state(of: key("broken-5"), now: b.now) == .failed)
        b.request(key("broken-0"))
        #expect(b.started.last == key("broken-0"))
    }

    /// A withdrawn item version: queued jobs are dropped and their waiters told at once; running ones are cancelled
    /// and their waiters told when they return; other items' jobs are untouched.
    @Test func withdrawingAnItemVersionAnswersItsWaiters() {
        var b = Bench(workers: 1)
        let running = b.request(key("gone", 0))
        let queued = b.request(key("gone", 1))
        let other = b.request(key("kept"))
        b.withdraw("gone")
        #expect(b.answers == [queued: .withdrawn])
        #expect(b.cancelledLanes == [0])
        b.finish(key("gone", 0), .cancelled)
        #expect(b.answers[running] == .withdrawn)
        #expect(b.started.last == key("kept"))
        #expect(b.answers[other] == nil)
    }

    /// Shutting down answers every queued waiter, cancels what runs, and starts nothing more.
    @Test func shutdownAnswersEveryWaiter() {
        var b = Bench(workers: 1)
        let running = b.request(key("a"))
        let queued = b.request(key("b"))
        b.machine.shutdown()
        b.take()
        #expect(b.answers == [queued: .cancelled])
        #expect(b.cancelledLanes == [0])
        b.finish(key("a"), .cancelled)
        #expect(b.answers[running] == .cancelled)
        let late = b.request(key("c"))
        #expect(b.answers[late] == .cancelled)
        #expect(b.started == [key("a")])
    }
}
