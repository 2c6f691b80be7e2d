import Foundation
import PolicyLab
import Prefetch
import Testing

/// A policy defined here, in the test: PolicyLab can only call it through the Prefetch module's protocol.
final class CountingPolicy: PrefetchPolicy, @unchecked Sendable {
    // `@unchecked Sendable`: the simulator is single-threaded; `calls` is only touched by the one test that owns it.
    let inner = WindowPolicy()
    var calls: [Int] = []
    var name: String { "counting" }
    func wanted(in context: PrefetchContext) -> [PrefetchRequest] {
        calls.append(context.current)
        return inner.wanted(in: context)
    }
}

@Suite struct SharedCodeTests {
    @Test("PolicyLab runs the Prefetch module's own policy types, not copies")
    func builtInsAreThePrefetchTypes() throws {
        let policies = try PolicySimulator.policies(named: "window,forward2,tiktokLike,staged,swipeAware")
        #expect(policies[0] is Prefetch.WindowPolicy)
        #expect((policies[1] as? Prefetch.ForwardPolicy)?.count == 2)
        #expect(policies[2] is Prefetch.TikTokLikePolicy)
        #expect(policies[3] is Prefetch.StagedPolicy)
        #expect(policies[4] is Prefetch.SwipeAwarePolicy)
        // The very types the Prefetch module's own list holds.
        let own = BuiltInPolicies.all.map { ObjectIdentifier(type(of: $0)) }
        #expect(policies.map { ObjectIdentifier(type(of: $0)) } == own)
    }

    @Test("the simulator asks the given policy at the start and on every swipe, as PrefetchScheduler does")
    func callsThePolicy() throws {
        let scenario = Scenario.generated(model: .mixed, swipes: 50, seed: 2)
        let policy = CountingPolicy()
        let m = try PolicySimulator(scenario: scenario).run(policy)
        #expect(m.policy == "counting")
        #expect(policy.calls.count == scenario.session.steps.count + 1)
        #expect(m == (try PolicySimulator(scenario: scenario).run(WindowPolicy())).renamed("counting"))
    }

    @Test("the simulator's scheduling rules are the Prefetch module's PrefetchRules, set from the scenario")
    func rulesAreShared() throws {
        let scenario = Scenario(session: SwipeSession(initialWatch: 1, steps: [.init(action: .next, watch: 1)]),
                                feedLength: 9, wraps: true, workers: 3, budget: 1234, keepHandlesWithin: 2)
        let rules: Prefetch.PrefetchRules = try PolicySimulator(scenario: scenario).rules
        #expect(rules == PrefetchRules(workers: 3, budget: 1234, keepHandlesWithin: 2, feedLength: 9, wraps: true))
    }

    @Test("the lanes' priorities are the rules': the live engine's nice levels and the weights the simulator shares cores by")
    func lanePriorities() {
        let rules = PrefetchRules(workers: 2, budget: 1, feedLength: 10)
        #expect(rules.nice(ofLane: rules.urgentLane) == PrefetchRules.urgentLaneNice)
        #expect(rules.nice(ofLane: 0) == PrefetchRules.backgroundLaneNice)
        #expect(PrefetchRules.cpuWeight(nice: 0) == 1024 && PrefetchRules.cpuWeight(nice: 5) == 335
                && PrefetchRules.cpuWeight(nice: 10) == 110)
        #expect(abs(PrefetchRules.cpuWeight(nice: 3) - 1024 / pow(1.25, 3)) < 1e-9)
    }

    @Test("a different policy changes the outcome (the policy is really consulted)")
    func policyMatters() throws {
        let scenario = Scenario.generated(model: .scroller, swipes: 150, seed: 4)
        let simulator = try PolicySimulator(scenario: scenario)
        #expect(simulator.run(ForwardPolicy(count: 0)).hits < simulator.run(WindowPolicy()).hits)
    }
}

extension SimulationMetrics {
    func renamed(_ name: String) -> SimulationMetrics {
        var copy = self
        copy.policy = name
        return copy
    }
}
