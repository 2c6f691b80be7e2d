import Foundation
import Prefetch
import TestSupport
import Testing
import EngineSupport

@Suite struct SchedulerTests {
    func scheduler(_ preparer: MockPreparer, policy: any PrefetchPolicy = .window(), length: Int = 20,
                   workers: Int = 2, budget: Int = 1_000_000) -> PrefetchScheduler<MockPreparer> {
        PrefetchScheduler(preparer: preparer, policy: policy, feedLength: length, workers: workers, budget: budget)
    }

    @Test("the window fills: neighbours at first frame, current buffered 1 s")
    func fills() throws {
        let preparer = MockPreparer(frameDuration: 0.25)
        let s = scheduler(preparer)
        s.update(current: 5)
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.slotIndexes == [3, 4, 5, 6, 7])
        for i in [3, 4, 6, 7] {
            let snap = try #require(s.snapshot(i))
            #expect(snap.stage == .firstFrame && snap.firstFrame?.index == i && snap.bufferedFrames == 0)
        }
        let current = try #require(s.snapshot(5))
        #expect(current.stage == .buffered(seconds: 1))
        #expect(current.bufferedSeconds >= 1)
        #expect(s.counters.decodedBytes == (4 + 1 + current.bufferedFrames) * 100)
        #expect(preparer.log.withLock { $0.maxConcurrent } <= 3, "two lanes plus the one kept for the current item")
    }

    @Test("shutdown from the control queue itself (an owner's deinit run by its event handler) completes")
    func shutdownOnControlQueue() {
        let preparer = MockPreparer(frameDuration: 0.25)
        let s = scheduler(preparer)
        let shut = DispatchSemaphore(value: 0)
        let once = Locked(false)
        s.setEventHandler { _ in
            guard once.withLock({ let first = !$0; $0 = true; return first }) else { return }
            s.shutdown()  // runs on the control queue: a `sync` onto it would trap
            shut.signal()
        }
        s.update(current: 5)
        #expect(shut.wait(timeout: .now() + 10) == .success)
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.slotIndexes.isEmpty)
        s.setEventHandler(nil)
    }

    @Test("moving releases what left the window: queued work never runs, running work is stopped")
    func cancelsOutOfWindow() throws {
        let preparer = MockPreparer(gated: true)
        let s = scheduler(preparer, workers: 2)
        // Wants 3...7. The current item starts and blocks on the gate before its first frame; while it waits for
        // it nothing else starts, so the four neighbours wait in the queue.
        let starts = Locked<[Int]>([])
        s.setTraceHandler { action in
            if case .start(let order) = action { starts.withLock { $0.append(order.index) } }
        }
        s.update(current: 5)
        // Events, not a delay: 5's job reaches the gate; then a barrier on the control queue (counters) has every
        // decision made so far behind it, and nothing can start until 5 has a first frame.
        #expect(preparer.changes.wait(timeout: 30) { preparer.log.withLock { $0.started } == [5] })
        _ = s.counters
        #expect(starts.get() == [5])
        #expect(preparer.log.withLock { $0.started } == [5])
        s.update(current: 15)  // wants 13...17: all of 3...7 leave
        preparer.open()
        #expect(s.waitUntilIdle(timeout: 10))
        let log = preparer.log.withLock { $0 }
        let oldStarted = log.started.filter { (3...7).contains($0) }
        #expect(oldStarted == [5], "only the one running when the window moved: \(log.started)")
        #expect(log.sawCancel.contains(5), "the running one saw its cancel")
        let counters = s.counters
        #expect(counters.cancelledWhileRunning == 1)
        #expect(counters.cancelledBeforeStart == 4)
        #expect(s.slotIndexes == [13, 14, 15, 16, 17])
        #expect(s.snapshot(5) == nil)
    }

    @Test("repeated requests for the same item merge into one job")
    func merges() {
        let preparer = MockPreparer(gated: true)
        let s = scheduler(preparer, policy: .forward(1), workers: 1)
        for _ in 0..<5 { s.update(current: 0) }
        preparer.open()
        #expect(s.waitUntilIdle(timeout: 10))
        let started = preparer.log.withLock { $0.started }
        #expect(started.filter { $0 == 1 }.count == 1)
        #expect(s.counters.merged >= 4)
    }

    @Test("the current item runs first")
    func priority() {
        let preparer = MockPreparer(gated: true)
        let s = scheduler(preparer, workers: 1)
        s.update(current: 10)
        preparer.open()
        #expect(s.waitUntilIdle(timeout: 10))
        let started = preparer.log.withLock { $0.started }
        #expect(started.first == 10)
        #expect(Array(started.prefix(3)).sorted() == [9, 10, 11])
    }

    @Test("over the budget, the farthest slot's frames go first and the budget is never exceeded")
    func budget() throws {
        // Room for 4 frames. The current item (5) gets its first frame and the frame after it (playback always gets
        // one); its further frames leave room for the neighbours' first frames and wait (backpressure), so 6 and 4
        // (by priority) get theirs; 7 and 3 find nothing worth less than themselves and are dropped.
        let preparer = MockPreparer(frameBytes: 100, frameDuration: 0.1)
        let evicted = Locked<[Int]>([])
        let s = scheduler(preparer, workers: 1, budget: 400)
        s.setEventHandler { event in
            if case .evicted(let index, _, _) = event { evicted.withLock { $0.append(index) } }
        }
        s.update(current: 5)
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.counters.peakDecodedBytes <= 400)
        #expect([5, 6, 4].allSatisfy { s.snapshot($0)?.firstFrame != nil })
        #expect(s.snapshot(5)?.bufferedFrames == 1)
        #expect(s.snapshot(3)?.firstFrame == nil && s.snapshot(7)?.firstFrame == nil)
        #expect(evicted.withLock { $0 }.isEmpty, "nothing was decoded to be thrown away")
        #expect(s.counters.admissionsPaused >= 1)
        // Playback goes on frame by frame: each frame taken makes room for the next.
        for number in 1...5 {
            var frame: MockFrame?
            _ = s.changes.wait(timeout: 10) {
                frame = s.takeBufferedFrame(5)
                return frame != nil
            }
            #expect(frame?.number == number)
        }
        // The last frame taken queued a top-up of 5's buffer: let it land before moving, so the move starts from
        // one state (with the top-up still decoding, the frame it reserved was evicted or took 7's or 8's room).
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.snapshot(5)?.bufferedFrames == 1)

        // Move one forward: 7 (distance 1) now outranks 4 (distance 2), whose first frame is evicted.
        evicted.withLock { $0 = [] }
        s.update(current: 6)
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.counters.peakDecodedBytes <= 400)
        #expect(s.snapshot(7)?.firstFrame != nil)
        #expect(s.snapshot(4)?.firstFrame == nil)
        #expect(evicted.withLock { $0 } == [4])
        #expect(s.counters.decodedBytes == 400)
    }

    @Test("swiping faster than decoding never exceeds the budget")
    func fastSwipes() {
        let preparer = MockPreparer(frameBytes: 1000, frameDuration: 0.04, frameDelay: 0.002)
        let s = scheduler(preparer, length: 200, budget: 9000)
        for i in 0..<150 { s.update(current: i % 200, history: [], now: Double(i)) }
        #expect(s.waitUntilIdle(timeout: 20))
        let c = s.counters
        #expect(c.peakDecodedBytes <= 9000)
        #expect(c.cancelledBeforeStart + c.cancelledWhileRunning > 0)
    }

    @Test("a failing item is marked failed and its neighbours are prepared")
    func failure() throws {
        let preparer = MockPreparer(failing: [6])
        let s = scheduler(preparer)
        s.update(current: 5)
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.snapshot(6)?.failure == "item 6 is corrupt")
        for i in [3, 4, 7] { #expect(s.snapshot(i)?.firstFrame != nil) }
        #expect(s.counters.failures == 1)
    }

    @Test("taking buffered frames for playback releases their bytes and tops the buffer up")
    func playback() throws {
        let preparer = MockPreparer(frameDuration: 0.25)
        let s = scheduler(preparer, policy: .forward(0))
        s.update(current: 0)
        #expect(s.waitUntilIdle(timeout: 10))
        var numbers: [Int] = []
        for _ in 0..<12 {
            #expect(s.changes.wait(timeout: 30) { (s.snapshot(0)?.bufferedFrames ?? 0) > 0 })
            numbers.append(try #require(s.takeBufferedFrame(0)).number)
        }
        #expect(numbers == Array(1...12))
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.snapshot(0)!.bufferedSeconds >= 1)
    }

    /// Plays `count` frames of item `index` after its first, as FeedPlayer's playback does: takes each buffered frame
    /// as the scheduler's event buffers it. Returns their numbers (nil entries for any that did not come within 10 s).
    func play(_ s: PrefetchScheduler<MockPreparer>, _ index: Int, count: Int) -> [Int?] {
        (0..<count).map { _ in
            var number: Int?
            _ = s.changes.wait(timeout: 10) {
                number = s.takeBufferedFrame(index)?.number
                return number != nil
            }
            return number
        }
    }

    @Test("at any budget, even one that starves the item on screen, playback gets every frame in order, none twice",
          arguments: [450, 700, 1_000_000])
    func everyFrameInOrder(budget: Int) throws {
        // Five first frames (500 bytes) alone exceed the smallest budget; the middle one leaves room for two more.
        let preparer = MockPreparer(frameBytes: 100, frameDuration: 0.04)
        let s = scheduler(preparer, budget: budget)
        s.update(current: 0)
        var position = 0
        for step in 0..<4 {
            if step > 0 {
                position += 1
                _ = s.swipe(to: position, history: [], now: Double(step))
            }
            _ = s.changes.wait(timeout: 10) { s.published(position).first != nil }
            #expect(s.published(position).first?.number == 0, "item \(position) shows its first frame")
            let numbers = play(s, position, count: 40)
            #expect(numbers == (1...40).map { $0 }, "budget \(budget), item \(position): \(numbers)")
            #expect(s.counters.peakDecodedBytes <= budget)
        }
    }

    @Test("a swipe answers from the published first frames and failures, and its update follows")
    func swipeAnswersFromTheBoard() throws {
        let preparer = MockPreparer(failing: [6])
        let s = scheduler(preparer)
        s.update(current: 5)
        #expect(s.waitUntilIdle(timeout: 10))
        let hit = s.swipe(to: 4, history: [], now: 1)
        #expect(hit.first?.index == 4 && hit.failure == nil)
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.slotIndexes == [2, 3, 4, 5, 6], "the queued update ran")
        let failed = s.swipe(to: 6, history: [], now: 2)
        #expect(failed.first == nil && failed.failure == "item 6 is corrupt")
        #expect(s.waitUntilIdle(timeout: 10))
        // Item 2 left the window when the current item became 6: nothing is published for it any more.
        let gone = s.swipe(to: 2, history: [], now: 3)
        #expect(gone.first == nil && gone.failure == nil)
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.snapshot(2)?.firstFrame?.index == 2, "and the cold item is prepared after the swipe")
    }

    @Test("after each move the slots are the policy's wanted set, each at its wanted stage, for every built-in policy",
          arguments: BuiltInPolicies.all.map(\.name))
    func windowAfterEachMove(policyName: String) throws {
        let policy = try #require(BuiltInPolicies.named(policyName))
        let preparer = MockPreparer(frameDuration: 0.25)
        let s = scheduler(preparer, policy: policy, length: 30, budget: 100_000_000)
        var history: [Swipe] = []
        var from = 0
        for (step, target) in [0, 1, 2, 3, 2, 10, 11, 29].enumerated() {
            let now = Double(step) * 0.5
            if target != from { history.append(Swipe(time: now, from: from, to: target)) }
            from = target
            s.update(current: target, history: history, now: now)
            #expect(s.waitUntilIdle(timeout: 10))
            let wanted = policy.wanted(in: PrefetchContext(current: target, feedLength: 30, history: history, now: now))
            #expect(s.slotIndexes == wanted.map(\.index).sorted(), "\(policyName) at \(target)")
            for request in wanted {
                let snap = try #require(s.snapshot(request.index))
                switch request.stage {
                case .probed:
                    #expect(snap.stage != nil && snap.firstFrame == nil, "\(policyName): \(request.index)")
                case .firstFrame:
                    #expect(snap.firstFrame?.index == request.index && snap.bufferedFrames == 0,
                            "\(policyName): \(request.index)")
                case .buffered(let seconds):
                    #expect(snap.firstFrame != nil && snap.bufferedSeconds >= seconds, "\(policyName): \(request.index)")
                }
            }
        }
    }

    @Test("shutdown releases everything")
    func shutdown() {
        let preparer = MockPreparer()
        let s = scheduler(preparer)
        s.update(current: 3)
        #expect(s.waitUntilIdle(timeout: 10))
        s.shutdown()
        #expect(s.waitUntilIdle(timeout: 10))
        #expect(s.slotIndexes.isEmpty)
        #expect(s.counters.decodedBytes == 0)
    }
}
