import Dispatch
import EngineSupport
import Foundation
@testable import PolicyLab
import Prefetch
import Testing

/// Current and ±1 at first frame, ±2 probed: a swipe retargets, trims, starts, cancels and releases decoders.
private struct RingPolicy: PrefetchPolicy {
    var name: String { "ring" }
    func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
        let offsets: [(Int, PrefetchStage)] = [(0, .firstFrame), (1, .firstFrame), (-1, .firstFrame), (2, .probed),
                                               (-2, .probed)]
        var out: [PrefetchRequest] = []
        for (rank, (offset, stage)) in offsets.enumerated() {
            guard let index = context.index(offset: offset), !out.contains(where: { $0.index == index }) else { continue }
            out.append(PrefetchRequest(index: index, stage: stage, priority: 1000 - rank))
        }
        return out
    }
}

/// A preparer that does what MediaPreparer does, at once: open (report `.probed`) unless it has a decoder, then
/// deliver frames of the cost profile's size and duration until told to stop. The handle counts frames delivered.
private struct InstantPreparer: PrefetchPreparer {
    let bytes: Int
    let seconds: Double
    func prepare(_ job: PrefetchJob<Int>, from handle: Int?) throws -> Int? {
        var delivered = handle ?? 0
        if handle == nil, !job.reached(.probed) { return delivered }
        while !job.token.isCancelled {
            delivered += 1
            if !job.deliver(delivered) { break }
        }
        return delivered
    }
    func byteCount(of frame: Int) -> Int { bytes }
    func duration(of frame: Int) -> Double { seconds }
}

@Suite struct TwoDriversTests {
    /// The actions in order, grouped by the item they concern (a lane's actions belong to the job last started on
    /// it). Jobs of different items overlap on real threads, so only each item's own order is deterministic live.
    static func byItem(_ actions: [PrefetchStateMachine.Action]) -> [Int: [String]] {
        var laneItem: [Int: Int] = [:]
        var out: [Int: [String]] = [:]
        for action in actions {
            let item: Int
            switch action {
            case .start(let order):
                laneItem[order.lane] = order.index
                item = order.index
            case .cancel(let lane), .stop(let lane): item = laneItem[lane] ?? -1
            case .dropFirst(let index), .dropBuffered(let index, _), .releaseHandle(let index): item = index
            }
            out[item, default: []].append(action.description)
        }
        return out
    }

    /// The events in order, grouped by item.
    static func byItem(_ events: [PrefetchEvent]) -> [Int: [String]] {
        var out: [Int: [String]] = [:]
        for event in events {
            switch event {
            case .started(let i, _), .reached(let i, _), .cancelled(let i, _), .failed(let i, _), .evicted(let i, _, _):
                out[i, default: []].append("\(event)")
            }
        }
        return out
    }

    @Test("one scripted session through the live scheduler and the simulator performs the same actions")
    func sameActions() throws {
        let steps: [SwipeAction] = [.next, .next, .next, .previous, .jump(7), .next, .next, .previous, .previous,
                                    .jump(1), .previous, .next, .jump(9), .previous, .previous]
        let costs = CostProfile(source: "test", display: "720x1280 bgra", items: [
            ItemCosts(name: "clip", openSeconds: 0.004, decoderOpenSeconds: 0.003, firstFrameSeconds: 0.012,
                      frameSeconds: 0.005, bytesPerFrame: 3_686_400, frameRate: 30, duration: 10),
        ])
        let session = SwipeSession(initialWatch: 5, steps: steps.map { .init(action: $0, watch: 5) })
        let scenario = Scenario(session: session, feedLength: 10, costs: costs, workers: 1, cores: 2,
                                budget: 1 << 30, keepHandlesWithin: 1)
        try scenario.validate()

        // Simulated: the engine in virtual time (each item settles long before the next swipe).
        var engine = SimulationEngine(scenario: scenario, policy: RingPolicy(), items: FeedItems(scenario),
                                      fastForward: true)
        engine.recordActions()
        _ = engine.run()
        let simulated = engine.trace ?? []
        let simulatedEvents = engine.eventTrace

        // Live: the Dispatch scheduler, the same moves, settling after each.
        let scheduler = PrefetchScheduler(preparer: InstantPreparer(bytes: 3_686_400, seconds: 1.0 / 30),
                                          policy: RingPolicy(), feedLength: 10, workers: 1, budget: 1 << 30,
                                          keepHandlesWithin: 1)
        let live = Locked<[PrefetchStateMachine.Action]>([])
        let liveEvents = Locked<[PrefetchEvent]>([])
        scheduler.setTraceHandler { action in live.withLock { $0.append(action) } }
        scheduler.setEventHandler { event in liveEvents.withLock { $0.append(event) } }
        var position = FeedPosition(length: 10)
        scheduler.update(current: 0, history: position.history, now: 0)
        #expect(scheduler.waitUntilIdle(timeout: 10))
        for (n, step) in steps.enumerated() {
            position.move(step, at: Double(n + 1) * 5)
            scheduler.update(current: position.current, history: position.history, now: Double(n + 1) * 5)
            #expect(scheduler.waitUntilIdle(timeout: 10))
        }
        let performed = live.withLock { $0 }
        let reported = liveEvents.withLock { $0 }

        #expect(!simulated.isEmpty)
        #expect(simulated.count == performed.count, "simulated \(simulated.count), live \(performed.count)")
        let simulatedByItem = Self.byItem(simulated), liveByItem = Self.byItem(performed)
        #expect(simulatedByItem.keys.sorted() == liveByItem.keys.sorted())
        for item in simulatedByItem.keys.sorted() {
            #expect(simulatedByItem[item] == liveByItem[item], "item \(item)")
        }
        #expect(simulatedEvents.count == reported.count && !reported.isEmpty)
        let simulatedEventsByItem = Self.byItem(simulatedEvents), reportedByItem = Self.byItem(reported)
        for item in simulatedEventsByItem.keys.sorted() {
            #expect(simulatedEventsByItem[item] == reportedByItem[item], "events of item \(item)")
        }
        // The session exercised starts, stops, trims to a lower stage and released decoders. (Cancellations
        // need a swipe while a job runs, whose timing differs between real threads and virtual time; the scheduler's
        // and the simulator's own tests cover them.)
        let kinds = Set(simulated.map { String($0.description.split(separator: " ")[0]) })
        #expect(kinds.isSuperset(of: ["start", "stop", "dropFirst", "releaseHandle"]), "\(kinds)")
    }
}
