import PolicyLab
import Prefetch
import Testing

@Suite struct DeterminismTests {
    @Test("the same seed gives the same numbers; another seed other numbers")
    func sameSeedSameNumbers() throws {
        func run(seed: UInt64) throws -> [SimulationMetrics] {
            let scenario = Scenario.generated(model: .mixed, swipes: 150, seed: seed)
            return try PolicySimulator(scenario: scenario).compare(BuiltInPolicies.all)
        }
        let a = try run(seed: 7), b = try run(seed: 7), c = try run(seed: 8)
        #expect(a == b)
        #expect(a != c)
        #expect(a.allSatisfy { $0.swipes > 120 })
    }

    @Test("skipping steady playback changes no number", arguments: ["mixed", "patient", "scroller,burst=0.5"])
    func fastForwardIsExact(model: String) throws {
        var scenario = Scenario.generated(model: try SwipeModel.parse(model), swipes: 80, seed: 3)
        for budget in [48 << 20, 256 << 20] {
            scenario.budget = budget
            var simulator = try PolicySimulator(scenario: scenario)
            let skipped = simulator.compare(BuiltInPolicies.all)
            simulator.skipsSteadyPlayback = false
            let stepped = simulator.compare(BuiltInPolicies.all)
            #expect(skipped == stepped)
        }
    }

    /// A longer session: a skipped tick must land exactly where the step-by-step tick does, even when a swipe falls on
    /// the same instant (seed 13 has one at swipe ~900: summed in another order, the skip showed one frame more).
    @Test("skipping steady playback changes no number over a longer session")
    func fastForwardIsExactLong() throws {
        let scenario = Scenario.generated(model: .mixed, swipes: 900, seed: 13)
        var simulator = try PolicySimulator(scenario: scenario)
        let skipped = simulator.run(WindowPolicy())
        simulator.skipsSteadyPlayback = false
        let stepped = simulator.run(WindowPolicy())
        #expect(skipped == stepped)
    }

    @Test("the same session with a slow network is deterministic and slower")
    func network() throws {
        var scenario = Scenario.generated(model: .mixed, swipes: 60, seed: 5)
        let local = try PolicySimulator(scenario: scenario).run(WindowPolicy())
        scenario.network = NetworkModel(bandwidth: BandwidthSchedule(constant: 1_500_000), roundTrip: 0.15)
        let simulator = try PolicySimulator(scenario: scenario)
        let remote = simulator.run(WindowPolicy())
        #expect(remote == simulator.run(WindowPolicy()))
        #expect(remote.timeToFirstFrameP99 > local.timeToFirstFrameP99)
        #expect(remote.stallSeconds > local.stallSeconds)
    }
}
