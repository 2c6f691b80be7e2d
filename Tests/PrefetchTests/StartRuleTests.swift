import Prefetch
import Testing

/// ``PrefetchRules/jobsToStart(current:queued:laneBusy:)`` decides which queued job starts on which lane, for the live
/// scheduler and for PolicyLab (which calls it for nearly every job it simulates, so it is written not to allocate).
/// These tests hold it to the rule as its documentation states it.
@Suite struct StartRuleTests {
    typealias Start = (index: Int, lane: Int)

    /// The rule stated plainly, one step at a time: the item on screen takes the urgent lane when it is free; then
    /// free background lanes, lowest first, take the most urgent waiting job (first frames, then more frames, then
    /// decoders; then highest priority, then lowest index, then first queued) — until the item on screen is behind (waiting for its first frame, or about to run dry).
    static func reference(_ rules: PrefetchRules, current: PrefetchRules.CurrentState?,
                          queued: [PrefetchRules.Queued], laneBusy: [Bool]) -> [Start] {
        var starts: [Start] = []
        var busy = laneBusy
        var waiting = queued
        var currentWaits = false
        if let current {
            currentWaits = current.isBehind && current.jobRunning
            if current.jobQueued, !busy[rules.urgentLane] {
                starts.append((current.index, rules.urgentLane))
                busy[rules.urgentLane] = true
                waiting.removeAll { $0.index == current.index }
                currentWaits = current.isBehind
            }
        }
        while !currentWaits, let lane = busy.prefix(rules.workers).firstIndex(of: false), !waiting.isEmpty {
            var pick = 0
            for i in waiting.indices.dropFirst() {
                let q = waiting[i], o = waiting[pick]
                if q.kind != o.kind ? q.kind > o.kind
                    : q.priority > o.priority || (q.priority == o.priority && q.index < o.index) { pick = i }
            }
            starts.append((waiting[pick].index, lane))
            busy[lane] = true
            if let current, waiting[pick].index == current.index, current.isBehind { currentWaits = true }
            waiting.remove(at: pick)
        }
        return starts
    }

    static func same(_ a: [Start], _ b: [Start]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.index == $1.index && $0.lane == $1.lane }
    }

    @Test("the item on screen takes the urgent lane; background lanes take the rest by priority, then index")
    func handPicked() {
        let rules = PrefetchRules(workers: 2, budget: 1 << 30, feedLength: 100)
        let queued: [PrefetchRules.Queued] = [.init(index: 7, priority: 5), .init(index: 4, priority: 9),
                                              .init(index: 6, priority: 9), .init(index: 5, priority: 1)]
        let current = PrefetchRules.CurrentState(index: 5, hasFirstFrame: true, jobQueued: true, jobRunning: false)
        let starts = rules.jobsToStart(current: current, queued: queued, laneBusy: [false, false, false])
        #expect(Self.same(starts, [(5, 2), (4, 0), (6, 1)]))
        // Lane 0 busy: only lane 1 is free for the background.
        let fewer = rules.jobsToStart(current: current, queued: queued, laneBusy: [true, false, false])
        #expect(Self.same(fewer, [(5, 2), (4, 1)]))
    }

    @Test("nothing else starts while the item on screen waits for its first frame")
    func currentWaits() {
        let rules = PrefetchRules(workers: 2, budget: 1 << 30, feedLength: 100)
        let queued: [PrefetchRules.Queued] = [.init(index: 3, priority: 9), .init(index: 4, priority: 8)]
        let running = PrefetchRules.CurrentState(index: 2, hasFirstFrame: false, jobQueued: false, jobRunning: true)
        #expect(rules.jobsToStart(current: running, queued: queued, laneBusy: [false, false, true]).isEmpty)
        let starting = PrefetchRules.CurrentState(index: 2, hasFirstFrame: false, jobQueued: true, jobRunning: false)
        #expect(Self.same(rules.jobsToStart(current: starting, queued: queued + [.init(index: 2, priority: 10)],
                                            laneBusy: [false, false, false]), [(2, 2)]))
        // The urgent lane busy: the item on screen starts on a background lane, and then nothing more.
        #expect(Self.same(rules.jobsToStart(current: starting, queued: queued + [.init(index: 2, priority: 10)],
                                            laneBusy: [false, false, true]), [(2, 0)]))
    }

    @Test("nothing else starts while playback of the item on screen is about to run dry")
    func currentRunsDry() {
        let rules = PrefetchRules(workers: 2, budget: 1 << 30, feedLength: 100)
        let queued: [PrefetchRules.Queued] = [.init(index: 3, priority: 9), .init(index: 4, priority: 8)]
        let dry = PrefetchRules.CurrentState(index: 2, hasFirstFrame: true, jobQueued: false, jobRunning: true,
                                             runningDry: true)
        #expect(rules.jobsToStart(current: dry, queued: queued, laneBusy: [false, false, true]).isEmpty)
        let fed = PrefetchRules.CurrentState(index: 2, hasFirstFrame: true, jobQueued: false, jobRunning: true)
        #expect(Self.same(rules.jobsToStart(current: fed, queued: queued, laneBusy: [false, false, true]),
                          [(3, 0), (4, 1)]))
        // Below the low-water mark of its target, and never above the target itself.
        #expect(PrefetchRules.runsDry(wanted: .buffered(seconds: 1), hasFirstFrame: true, bufferedSeconds: 0.05))
        #expect(!PrefetchRules.runsDry(wanted: .buffered(seconds: 1), hasFirstFrame: true, bufferedSeconds: 0.1))
        #expect(!PrefetchRules.runsDry(wanted: .buffered(seconds: 0.04), hasFirstFrame: true, bufferedSeconds: 0.05))
        #expect(!PrefetchRules.runsDry(wanted: .firstFrame, hasFirstFrame: true, bufferedSeconds: 0))
    }

    @Test("agrees with the rule stated plainly on 20,000 random situations (duplicates and more than 64 jobs too)")
    func randomSituations() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        for round in 0..<20_000 {
            let workers = 1 + next(4)
            let rules = PrefetchRules(workers: workers, budget: 1 << 30, feedLength: 1000)
            let count = round % 100 == 0 ? 60 + next(20) : next(9)
            let kinds: [PrefetchRules.Queued.Kind] = [.decoder, .frames, .firstFrame]
            let queued = (0..<count).map { _ in
                PrefetchRules.Queued(index: next(8), priority: next(4), kind: kinds[next(3)])
            }
            let laneBusy = (0...workers).map { _ in next(3) == 0 }
            let current: PrefetchRules.CurrentState? = next(5) == 0 ? nil : PrefetchRules.CurrentState(
                index: next(8), hasFirstFrame: next(2) == 0, jobQueued: next(2) == 0, jobRunning: next(3) == 0,
                runningDry: next(3) == 0)
            let got = rules.jobsToStart(current: current, queued: queued, laneBusy: laneBusy)
            let want = Self.reference(rules, current: current, queued: queued, laneBusy: laneBusy)
            #expect(Self.same(got, want), "round \(round): \(got) != \(want)")
            if !Self.same(got, want) { return }
        }
    }
}
