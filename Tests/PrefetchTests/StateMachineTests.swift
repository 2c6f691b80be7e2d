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

    @Test("the item on screen starts alone on its lane; neighbours start once its playback cannot run dry")
    func startOrder() {
        var m = Self.machine()
        m.apply(current: 5, history: [], now: 0)
        m.pump()
        #expect(Self.taken(&m) == ["start #5 buffered(0.1s) lane 1",
                                   "emit started(index: 5, target: buffered(0.1s))"])
        m.reach(.probed, index: 5, lane: 1)
        #expect(m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1) == .first)
        // Its first frame alone: playback would run dry at once, so nothing else starts yet.
        #expect(!Self.taken(&m).contains { $0.hasPrefix("start") })
        #expect(m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1) == .buffered)
        #expect(m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1) == .buffered)
        #expect(!Self.taken(&m).contains { $0.hasPrefix("start") })
        #expect(m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1) == .buffered)
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
        for _ in 0..<4 { _ = m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1) }
        m.clearActions()
        // #6 runs on lane 0, #4 is queued; #5's job, told to stop, has not returned yet.
        m.apply(current: 9, history: [], now: 1)
        let actions = Self.taken(&m)
        #expect(actions.contains("cancel lane 0") && actions.contains("cancel lane 1"), "\(actions)")
        #expect(actions.contains("emit cancelled(index: 4, running: false)"))
        #expect(actions.contains("dropFirst #5") && actions.contains("dropBuffered #5 ×3"), "\(actions)")
        #expect(m.counters.decodedBytes == 0)
        // The cancelled job returns: its slot goes and its decoder is not kept.
        #expect(m.finish(lane: 0, result: .completed(handle: true)) == false)
        #expect(m.slot(6) == nil)
        #expect(m.counters.cancelledWhileRunning == 2 && m.counters.cancelledBeforeStart == 1)
    }

    /// Current buffered 1 s; +2 at first frame before +1 (so that a farther slot holds a frame first).
    struct FartherFirst: PrefetchPolicy {
        var name: String { "fartherFirst" }
        func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
            [(0, PrefetchStage.buffered(seconds: 1), 100), (2, .firstFrame, 90), (1, .firstFrame, 80)]
                .compactMap { offset, stage, priority in
                    context.index(offset: offset).map { PrefetchRequest(index: $0, stage: stage, priority: priority) }
                }
        }
    }

    @Test("over the budget, a first frame evicts a farther slot's frames, never the buffer of the item on screen")
    func eviction() {
        var m = PrefetchStateMachine(policy: FartherFirst(), rules: PrefetchRules(workers: 1, budget: 400,
                                                                                   feedLength: 10))
        m.apply(current: 5, history: [], now: 0)
        m.pump()
        for _ in 0..<3 { _ = m.deliver(bytes: 100, duration: 0.05, to: 5, lane: 1) }  // #5: first + 0.1 s
        #expect(m.slot(7)?.runningLane == 0)
        #expect(m.deliver(bytes: 100, duration: 1.0 / 30, to: 7, lane: 0) == .first)  // 400 held
        _ = m.finish(lane: 0, result: .completed(handle: true))  // #6 starts on lane 0
        #expect(m.slot(6)?.runningLane == 0)
        m.clearActions()
        // #6's first frame is worth more than #7's (farther); #5's buffer (the item on screen) is not touched.
        #expect(m.deliver(bytes: 100, duration: 1.0 / 30, to: 6, lane: 0) == .first)
        let actions = Self.taken(&m)
        #expect(actions.contains("dropFirst #7") && actions.contains("emit evicted(index: 7, frames: 1, bytes: 100)"),
                "\(actions)")
        #expect(m.counters.decodedBytes == 400 && m.counters.peakDecodedBytes == 400)
        #expect(m.slot(7)?.starved == true && m.slot(5)?.bufferedFrames == 2)
        // Nothing farther is left: the current item's buffered frame has no room, and is refused rather than
        // evicting a neighbour's first frame.
        #expect(m.deliver(bytes: 100, duration: 0.05, to: 5, lane: 1) == .rejected)
        #expect(m.slot(5)?.bufferedFrames == 2 && m.slot(6)?.hasFirstFrame == true)
    }

    @Test("backpressure: a frame is admitted before it is decoded, or the job pauses until playback makes room")
    func admission() {
        var m = PrefetchStateMachine(policy: Buffer(seconds: 10), rules: PrefetchRules(workers: 1, budget: 300,
                                                                                       feedLength: 3))
        m.apply(current: 0, history: [], now: 0)
        m.pump()
        #expect(m.deliver(bytes: 100, duration: 0.04, to: 0, lane: 1) == .first)
        #expect(m.admit(bytes: 100, to: 0, lane: 1) == .go)
        #expect(m.counters.decodedBytes == 200)  // reserved before it is decoded
        #expect(m.admit(bytes: 100, to: 0, lane: 1) == .go)
        #expect(m.counters.decodedBytes == 300)
        #expect(m.deliver(bytes: 100, duration: 0.04, to: 0, lane: 1) == .buffered)
        #expect(m.deliver(bytes: 100, duration: 0.04, to: 0, lane: 1) == .buffered)
        #expect(m.counters.decodedBytes == 300 && m.counters.peakDecodedBytes == 300)
        // Full: the job pauses (it returns with its decoder at the undecoded frame) and is not queued again…
        #expect(m.admit(bytes: 100, to: 0, lane: 1) == .pause)
        #expect(m.counters.admissionsPaused == 1 && m.slot(0)?.waitingForRoom == true)
        let kept = m.finish(lane: 1, result: .completed(handle: true))
        #expect(kept)
        #expect(m.slot(0)?.job == PrefetchStateMachine.JobState.none)
        // …until playback takes a frame: then it goes on from where it paused.
        m.clearActions()
        let took = m.takeBufferedFrame(0)
        #expect(took && Self.taken(&m).contains("start #0 buffered(10.0s) lane 1"))
        #expect(m.admit(bytes: 100, to: 0, lane: 1) == .go)
        // A job that returns without delivering what it was admitted for gives the bytes back.
        #expect(m.counters.decodedBytes == 300)
        _ = m.finish(lane: 1, result: .cancelled)
        #expect(m.counters.decodedBytes == 200)
    }

    @Test("a buffered frame leaves room for the first frames still wanted")
    func admissionKeepsRoomForFirstFrames() {
        var m = Self.machine(budget: 300)
        m.apply(current: 5, history: [], now: 0)
        m.pump()
        #expect(m.deliver(bytes: 100, duration: 0.05, to: 5, lane: 1) == .first)
        // Playback must go on: the frame after the first is admitted whatever else is wanted.
        #expect(m.admit(bytes: 100, to: 5, lane: 1) == .go)
        #expect(m.deliver(bytes: 100, duration: 0.05, to: 5, lane: 1) == .buffered)
        // #4 and #6 still want their first frames: 200 held + 100 + 2 × 100 does not fit 300.
        #expect(m.admit(bytes: 100, to: 5, lane: 1) == .pause)
    }

    @Test("the item left behind plays from its start if it becomes current again: its decoder is not kept")
    func leavingDropsThePlaybackBuffer() {
        var m = Self.machine()
        m.apply(current: 5, history: [], now: 0)
        m.pump()
        for _ in 0..<4 { _ = m.deliver(bytes: 100, duration: 1.0 / 30, to: 5, lane: 1) }
        let took = m.takeBufferedFrame(5)  // playback went on
        #expect(took)
        m.clearActions()
        m.apply(current: 6, history: [], now: 1)
        let actions = Self.taken(&m)
        #expect(actions.contains("dropBuffered #5 ×2") && !actions.contains("dropFirst #5"), "\(actions)")
        // Its job (told to stop) returns its decoder: not kept, as it is past the dropped frames.
        #expect(m.finish(lane: 1, result: .completed(handle: true)) == false)
        m.clearActions()
        m.apply(current: 5, history: [], now: 2)
        m.pump()
        // The new job starts afresh; the one frame it holds is decoded again, not delivered twice.
        let start = m.actions.compactMap { action -> PrefetchStateMachine.JobOrder? in
            if case .start(let order) = action, order.index == 5 { return order }
            return nil
        }
        #expect(start.first?.heldFrames == 1)
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
