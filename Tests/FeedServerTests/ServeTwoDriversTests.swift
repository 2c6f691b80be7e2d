import EngineSupport
@testable import FeedServer
import Foundation
import Media
@testable import PolicyLab
import Prefetch
import Testing

/// One serving scheduler, two drivers: the live server's `WorkPool` (threads, continuations, cancellation tokens) and
/// PolicyLab's `SimServer` (virtual time) fed the same scripted multi-viewer session — viewers focusing and wanting
/// ahead, requests and hang-ups, jobs made and failed, at the same clock readings — take exactly the same actions.
@Suite struct ServeTwoDriversTests {
    enum Step {
        case focus(viewer: Int, folder: String?)
        case want(viewer: Int, [JobKey: Int])
        case request(JobKey)
        /// The client of the `n`th request (from 1) hangs up.
        case hangUp(Int)
        /// The job on lane `lane` is made, or fails.
        case made(lane: Int)
        case failed(lane: Int)
        case close(viewer: Int)
    }

    static func seg(_ item: Int, _ k: Int = 0) -> JobKey {
        JobKey(folder: "\(item)", artifact: .segment(rendition: 0, index: k))
    }
    static func manifest(_ item: Int) -> JobKey { JobKey(folder: "\(item)", artifact: .manifest) }
    static func poster(_ item: Int) -> JobKey { JobKey(folder: "\(item)", artifact: .poster) }

    /// Two viewers on a cold feed: one swipes through items 0…3 (a cold miss, a hit, a flick that cancels work),
    /// the other arrives on item 2 (sharing its jobs), a broken item's failure is remembered, a client hangs up.
    static let script: [Step] = [
        .focus(viewer: 1, folder: "0"),
        .want(viewer: 1, [manifest(0): 1000, manifest(1): 999, manifest(2): 998]),
        .request(manifest(0)),                    // joins the prefetch job: now a request
        .request(poster(0)),
        .made(lane: 0),
        .made(lane: 1),
        .want(viewer: 1, [seg(0, 1): 1000, manifest(1): 999, manifest(2): 998]),
        .focus(viewer: 2, folder: "2"),
        .request(manifest(2)),                    // waits for the wide slot
        .want(viewer: 2, [manifest(3): 999, poster(2): 998]),
        .made(lane: 0),
        .made(lane: 1),
        .focus(viewer: 1, folder: "1"),
        .want(viewer: 1, [seg(1, 1): 1000, poster(1): 999, manifest(9): 997]),   // a flick: work dropped
        .request(poster(1)),
        .made(lane: 0),
        .failed(lane: 1),
        .request(manifest(9)),                    // remembered: answered at once
        .focus(viewer: 1, folder: "3"),
        .want(viewer: 1, [manifest(3): 1000, seg(3, 1): 990]),
        .request(seg(3, 0)),
        .hangUp(6),
        .made(lane: 0),
        .made(lane: 1),
        .failed(lane: 0),                         // the broken item's manifest
        .request(manifest(9)),                    // remembered: answered at once, not run again
        .close(viewer: 2),
        .close(viewer: 1),
    ]

    static let rules = ServeScheduler.Rules(workers: 2, failureMemory: 30, holdLimit: 1.5)

    /// The actions the simulation's driver takes for the script, one virtual second per step.
    static func simulated() -> [String] {
        let items = (0..<10).map { n in
            ServedItem(name: "\(n)", renditions: [.init(name: "540x960", width: 540, height: 960)],
                       segmentStarts: [0, 1, 4], duration: 6, manifest: .init(wall: 1, cpu: 1),
                       poster: .init(wall: 0.1, cpu: 0.1), firstSegment: .init(wall: 0.5, cpu: 0.5),
                       segment: .init(wall: 0.5, cpu: 0.5))
        }
        var server = SimServer(items: items, rules: rules, cores: 2)
        server.log = []
        var waiters: [(UInt64, JobKey)] = []
        for (n, step) in script.enumerated() {
            let now = Double(n)
            switch step {
            case .focus(let viewer, let folder): server.focus(viewer: viewer, on: folder, now: now)
            case .want(let viewer, let wants): server.want(viewer: viewer, wants, now: now)
            case .request(let key): waiters.append((server.request(key, now: now), key))
            case .hangUp(let k): server.hangUp(waiters[k - 1].1, waiter: waiters[k - 1].0, now: now)
            case .made(let lane): server.lanes[lane].map { server.end($0.key, .made, now: now) }
            case .failed(let lane): server.lanes[lane].map { server.end($0.key, .failed, now: now) }
            case .close(let viewer): server.close(viewer: viewer, now: now)
            }
        }
        return (server.log ?? []).map(String.init(describing:))
    }

    /// A perform that blocks each job until the script makes or fails it (or it is cancelled).
    final class Gates: Sendable {
        let outcomes = Locked<[JobKey: Bool]>([:])
        func perform(_ key: JobKey, _ token: CancellationToken) throws {
            while true {
                if token.isCancelled { throw WorkPool.Cancelled() }
                if let made = outcomes.withLock({ $0.removeValue(forKey: key) }) {
                    if made { return }
                    throw MediaError(.invalidData, operation: "test", item: key.folder, message: "broken")
                }
                usleep(1000)
            }
        }
    }

    /// The actions the live driver takes for the script, the clock reading the same second per step. After each
    /// step the test waits (bounded) until the pool has handled it and every job it cancelled has returned.
    static func live() async throws -> [String] {
        let clock = Locked(0.0)
        let gates = Gates()
        let pool = WorkPool(workers: rules.workers, failureMemory: rules.failureMemory, holdLimit: rules.holdLimit,
                            now: { clock.get() }, perform: gates.perform)
        defer { pool.shutdown() }
        pool.startRecording()
        var tasks: [Task<Void, any Error>] = []
        for (n, step) in script.enumerated() {
            clock.set(Double(n))
            let before = pool.recorded
            switch step {
            case .focus(let viewer, let folder): pool.focus(viewer: viewer, on: folder)
            case .want(let viewer, let wants): pool.want(viewer: viewer, wants)
            case .request(let key): tasks.append(Task { try await pool.wait(key) })
            case .hangUp(let k): tasks[k - 1].cancel()
            case .made(let lane): pool.running[lane].map { key in gates.outcomes.withLock { $0[key] = true } }
            case .failed(let lane): pool.running[lane].map { key in gates.outcomes.withLock { $0[key] = false } }
            case .close(let viewer):
                pool.focus(viewer: viewer, on: nil)
                pool.want(viewer: viewer, [:])
            }
            // One event per step (two for a close: the pool has no close of its own), plus one per job it cancelled.
            var expected = before.events + ({ if case .close = step { 2 } else { 1 } }())
            let deadline = ContinuousClock.now + .seconds(10)
            while true {
                let now = pool.recorded
                let cancels = now.actions.dropFirst(before.actions.count).count { if case .cancel = $0 { true } else { false } }
                expected = before.events + ({ if case .close = step { 2 } else { 1 } }()) + cancels
                if now.events >= expected { break }
                guard ContinuousClock.now < deadline else {
                    Issue.record("step \(n) \(step): \(now.events) events of \(expected) after 10 s")
                    pool.shutdown()
                    return now.actions.map(String.init(describing:))
                }
                try await Task.sleep(for: .milliseconds(2))
            }
        }
        let actions = pool.recorded.actions.map(String.init(describing:))
        pool.shutdown()
        for task in tasks { _ = try? await task.value }
        return actions
    }

    @Test func aScriptedSessionGivesTheSameActionsThroughBothDrivers() async throws {
        let simulated = Self.simulated()
        let live = try await Self.live()
        #expect(simulated.count > 25)
        #expect(simulated.contains("answer #7 9 manifest failed"))
        #expect(simulated.contains("answer #6 3 seg(r0,0) cancelled"))
        #expect(live == simulated)
        if live != simulated {
            for (n, (a, b)) in zip(live, simulated).enumerated() where a != b {
                Issue.record("first difference at action \(n): live \(a), simulated \(b)")
                break
            }
        }
    }
}
