import Benchmark
import PolicyLab
import Prefetch

/// PolicyLab's speed: 100,000 swipes of one policy in virtual time (target ≤ 3 s), for each built-in policy, over the
/// default `mixed` viewer (seed 7) with the built-in cost profile, 2 workers and a 256 MiB budget — what
/// `videofeed simulate --policies P --swipes 100000 --seed 7` runs. The session is drawn once, outside the
/// measurement; each iteration simulates it from scratch.
let benchmarks: @Sendable () -> Void = {
    let scenario = Scenario.generated(model: .mixed, swipes: 100_000, seed: 7)
    let fastScrolling = Scenario.generated(model: .scroller, swipes: 100_000, seed: 7)
    let configuration = Benchmark.Configuration(metrics: [.wallClock, .peakMemoryResident], timeUnits: .milliseconds,
                                                warmupIterations: 0, scalingFactor: .one, maxDuration: .seconds(60),
                                                maxIterations: 3)
    for (label, setup) in [("mixed", scenario), ("scroller", fastScrolling)] {
        for policy in BuiltInPolicies.all {
            Benchmark("100,000 swipes, \(label), \(policy.name)", configuration: configuration) { benchmark in
                let simulator = try PolicySimulator(scenario: setup)
                for _ in benchmark.scaledIterations {
                    let metrics = simulator.run(policy)
                    precondition(metrics.swipes > 90_000, "the session must be simulated whole")
                    blackHole(metrics)
                }
            }
        }
    }
}
