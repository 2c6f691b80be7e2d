import Prefetch
import Testing

/// The state machine alone: events in, actions out, no threads.
@Suite struct StateMachineTests {
    /// Current buffered 0.1 s (three frames of 1/30 s), ±1 at first frame.
    struct Near: PrefetchPolicy {
        var name: String { "near" }
        func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
            [(0, PrefetchStage.buffered(seconds: 0.1)), (1, .firstFrame), (-1, .firstFrame)].enumerated()
                .compactMap { rank, entry in
                    context.index(offset: entry.0).map { PrefetchRequest(index: $0, stage: entry.1, priority: 100 - rank) }
                }
        }
    }

    static func machine(budget: Int = 1 << 30) -> PrefetchStateMachine {
        PrefetchStateMachine(policy: Near(), rules: PrefetchRules(workers: 1, budget: budget, feedLength: 10))
    }

    /// The actions, then the events, as text; clears both.
    static func taken(_ m: inout PrefetchStateMachine) -> [String] {
        defer { m.clearActions() }
        return m.actions.map(\.description) + m.events.map { "emit \($0)" }
    }

    @Test("the item on screen starts alone on its lane; its first frame lets the neighbours start")
    func startOrder() {
        var m = Self.machine()
        m.apply(current: 5, history: [], now: 0)
        m.pump()
        #expect(Self.taken(&m) == ["start #5 buffered(0.1s) lane 1",
                                   "emit started(index: 5, target: buffered(0.1s))"])
        m.reach(.probed, index: 5, lane: 1)
        #expect(m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1) == .first)
        let actions = Self.taken(&m)
        #expect(actions.contains("start #6 firstFrame lane 0"), "\(actions)")
        #expect(!actions.contains { $0.hasPrefix("start #4") }, "one background lane: #4 waits")
        #expect(m.slot(4)?.job == .queued)
    }

    @Test("a swipe away cancels the running job and the queued one, and frees what they held")
    func swipeAway() {
        var m = Self.machine()
        m.apply(current: 5, history: [], now: 0)
        m.pump()
        _ = m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1)
        _ = m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1)
        m.clearActions()
        // #6 runs on lane 0, #4 is queued; #5 keeps decoding on lane 1.
        m.apply(current: 9, history: [], now: 1)
        let actions = Self.taken(&m)
        #expect(actions.contains("cancel lane 0") && actions.contains("cancel lane 1"), "\(actions)")
        #expect(actions.contains("emit cancelled(index: 4, running: false)"))
        #expect(actions.contains("dropFirst #5") && actions.contains("dropBuffered #5 ×1"), "\(actions)")
        #expect(m.counters.decodedBytes == 0)
        // The cancelled job returns: its slot goes and its decoder is not kept.
        #expect(m.finish(lane: 0, result: .completed(handle: true)) == false)
        #expect(m.slot(6) == nil)
        #expect(m.counters.cancelledWhileRunning == 2 && m.counters.cancelledBeforeStart == 1)
    }

    @Test("over the budget, a first frame evicts a farther slot's frames and cancels its job")
    func eviction() {
        var m = Self.machine(budget: 300)
        m.apply(current: 5, history: [], now: 0)
        m.pump()
        _ = m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1)  // #5 first frame; #6 starts on lane 0
        _ = m.deliver(bytes: 100, duration: 1.0 / 30, to: 6, lane: 0)  // #6 first frame: 200 held
        _ = m.finish(lane: 0, result: .completed(handle: true))       // #4 starts on lane 0
        _ = m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1)  // #5 buffered: 300 held
        m.clearActions()
        // #4's first frame is worth more than #5's buffered frame: #5's buffer goes, #5 is starved and cancelled.
        #expect(m.deliver(bytes: 100, duration: 1.0 / 30, to: 4, lane: 0) == .first)
        let actions = Self.taken(&m)
        #expect(actions.contains("dropBuffered #5 ×1"), "\(actions)")
        #expect(actions.contains("cancel lane 1") && actions.contains("emit evicted(index: 5, frames: 1, bytes: 100)"))
        #expect(m.counters.decodedBytes == 300 && m.counters.peakDecodedBytes == 300)
        #expect(m.slot(5)?.starved == true)
    }

    @Test("a failed job marks its item failed, once, and it gets no more work")
    func failure() {
        var m = Self.machine()
        m.apply(current: 0, history: [], now: 0)
        m.pump()
        m.clearActions()
        #expect(m.finish(lane: 1, result: .failed("corrupt")) == false)
        #expect(m.failure(of: 0) == "corrupt" && m.slot(0)?.failed == true && m.counters.failures == 1)
        #expect(Self.taken(&m).contains("emit failed(index: 0, message: \"corrupt\")"))
        m.apply(current: 0, history: [], now: 1)
        m.pump()
        #expect(!Self.taken(&m).contains { $0.hasPrefix("start #0") })
    }

    /// Current buffered `seconds`, nothing else.
    struct Buffer: PrefetchPolicy {
        var seconds: Double
        var name: String { "buffer" }
        func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
            [PrefetchRequest(index: context.current, stage: .buffered(seconds: seconds), priority: 1)]
        }
    }

    @Test("frames of mixed durations: the buffered seconds are always their sum, oldest first, through taking and evening out")
    func mixedDurations() {
        /// Summed one at a time, oldest first.
        func sum(_ d: [Double]) -> Double { d.reduce(0, +) }
        var m = PrefetchStateMachine(policy: Buffer(seconds: 10), rules: PrefetchRules(workers: 1, budget: 1 << 30,
                                                                                       feedLength: 3))
        m.apply(current: 0, history: [], now: 0)
        m.pump()
        _ = m.deliver(bytes: 10, duration: 0.04, to: 0, lane: 1)  // the first frame
        var held: [Double] = []
        for d in [0.04, 0.04, 1.0 / 30, 0.05, 0.04, 1.0 / 30] {
            #expect(m.deliver(bytes: 10, duration: d, to: 0, lane: 1) == .buffered)
            held.append(d)
            #expect(m.slot(0)?.bufferedSeconds == sum(held) && m.slot(0)?.bufferedFrames == held.count)
        }
        #expect(m.bufferedFrames(at: 0).map(\.duration) == held)
        // Playback takes the oldest frames.
        for _ in 0..<3 {
            let took = m.takeBufferedFrame(0)
            #expect(took)
            held.removeFirst()
            #expect(m.slot(0)?.bufferedSeconds == sum(held), "\(held)")
        }
        var n = PrefetchStateMachine(policy: Buffer(seconds: 10), rules: PrefetchRules(workers: 1, budget: 1 << 30,
                                                                                       feedLength: 3))
        n.apply(current: 0, history: [], now: 0)
        n.pump()
        _ = n.deliver(bytes: 10, duration: 0.04, to: 0, lane: 1)
        for d in [0.05, 0.04, 1.0 / 30] { _ = n.deliver(bytes: 10, duration: d, to: 0, lane: 1) }
        #expect(n.slot(0)?.bufferedSeconds == 0.05 + 0.04 + 1.0 / 30)
        // Taking the 0.05 leaves 0.04 and 1/30, then the 0.04 leaves one frame: equal frames again, counted.
        let tookTwo = n.takeBufferedFrame(0) && n.takeBufferedFrame(0)
        #expect(tookTwo)
        #expect(n.slot(0)?.uniformFrame == PrefetchStateMachine.BufferedFrame(bytes: 10, duration: 1.0 / 30))
        #expect(n.slot(0)?.bufferedSeconds == 1.0 / 30)
        _ = n.deliver(bytes: 10, duration: 1.0 / 30, to: 0, lane: 1)
        #expect(n.slot(0)?.bufferedSeconds == 1.0 / 30 + 1.0 / 30 && n.slot(0)?.uniformFrame != nil)
    }
}
