import Dispatch
import EngineSupport
import Testing

/// ``HandoffQueue``: the bounded hand-over between a producing and a consuming thread behind overlapped decoding.
@Suite struct HandoffQueueTests {
    /// A generous bound for a wait that only a broken hand-over makes long: the tests never depend on timing, the
    /// bound only turns a deadlock into a failure.
    static let deadlockGuard = DispatchTimeInterval.seconds(60)

    @Test("every element arrives once, in order, and never more than the capacity wait")
    func orderAndBound() throws {
        var taken: [Int] = []
        var mostWaiting = 0
        try HandoffQueue<Int>.run(capacity: 2, threadName: "test.produce") { queue in
            for i in 0..<500 { guard queue.put(i) else { return } }
        } consume: { value in
            taken.append(value)
            return true
        }
        #expect(taken == Array(0..<500))
        // The same through the queue directly, watching how many wait while a producer fills it as fast as it can.
        let queue = HandoffQueue<Int>(capacity: 3)
        let producer = DispatchQueue(label: "test.producer")
        producer.async {
            for i in 0..<500 { queue.put(i) }
            queue.finish()
        }
        var again: [Int] = []
        while let value = queue.take() {
            again.append(value)
            mostWaiting = max(mostWaiting, queue.count)
        }
        #expect(again == Array(0..<500))
        #expect(mostWaiting <= 3)
    }

    @Test("the producer runs ahead on its own thread while the consumer holds an element")
    func producerRunsAhead() throws {
        let producedSecond = DispatchSemaphore(value: 0)
        var sawOverlap = false
        try HandoffQueue<Int>.run(capacity: 2, threadName: "test.produce") { queue in
            for i in 0..<4 {
                guard queue.put(i) else { return }
                if i == 1 { producedSecond.signal() }
            }
        } consume: { value in
            // While element 0 is being consumed, element 1 gets produced: the stages overlap. A consumer called
            // inline by the producer (no hand-off) would wait here for an element that never comes.
            if value == 0 { sawOverlap = producedSecond.wait(timeout: .now() + Self.deadlockGuard) == .success }
            return true
        }
        #expect(sawOverlap)
    }

    @Test("a consumer that stops early stops the producer and drops what waits")
    func consumerStops() throws {
        let puts = Locked(0)
        var taken: [Int] = []
        try HandoffQueue<Int>.run(capacity: 2, threadName: "test.produce") { queue in
            var i = 0
            while queue.put(i) {
                puts.withLock { $0 += 1 }
                i += 1
            }
        } consume: { value in
            taken.append(value)
            return value < 2
        }
        #expect(taken == [0, 1, 2])
        // run() returned, so the producer ended: its last put was refused, and it never got more than the capacity (2) ahead of the 3 taken.
        #expect(puts.get() <= 3 + 2)
    }

    struct Failure: Error, Equatable { let stage: String }

    @Test("a producer's error comes after every element it put before")
    func producerError() {
        var taken: [Int] = []
        #expect(throws: Failure(stage: "produce")) {
            try HandoffQueue<Int>.run(capacity: 1, threadName: "test.produce") { queue in
                for i in 0..<5 { queue.put(i) }
                throw Failure(stage: "produce")
            } consume: { value in
                taken.append(value)
                return true
            }
        }
        #expect(taken == [0, 1, 2, 3, 4])
    }

    @Test("a consumer's error stops the producer and is thrown")
    func consumerError() {
        let producerEnded = Locked(false)
        #expect(throws: Failure(stage: "consume")) {
            try HandoffQueue<Int>.run(capacity: 1, threadName: "test.produce") { queue in
                var i = 0
                while queue.put(i) { i += 1 }
                producerEnded.set(true)
            } consume: { value in
                if value == 3 { throw Failure(stage: "consume") }
                return true
            }
        }
        #expect(producerEnded.get())
    }

    @Test("after finish the waiting elements are still taken, then nil")
    func finishKeepsElements() {
        let queue = HandoffQueue<String>(capacity: 2)
        queue.put("a")
        queue.put("b")
        queue.finish()
        #expect(queue.take() == "a")
        #expect(queue.take() == "b")
        #expect(queue.take() == nil)
        queue.waitUntilFinished()
    }

    @Test("after cancel nothing is taken and put refuses")
    func cancelRefuses() {
        let queue = HandoffQueue<String>(capacity: 2)
        queue.put("a")
        queue.cancel()
        #expect(queue.count == 0)
        #expect(queue.take() == nil)
        #expect(!queue.put("b"))
    }
}
