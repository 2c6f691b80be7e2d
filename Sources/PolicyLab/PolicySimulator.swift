import Prefetch

/// Runs prefetch policies over a ``Scenario`` in virtual time and compares them.
///
/// The policies are the Prefetch module's own values (``BuiltInPolicies`` or any ``PrefetchPolicy``), and the
/// scheduling follows ``PrefetchRules``, the value the live ``PrefetchScheduler`` calls — shared code, not a copy.
/// Each run is single-threaded and deterministic; ``compare(_:)`` runs the policies one after another over the very
/// same session.
public struct PolicySimulator: Sendable {
    /// The scenario every policy faces.
    public let scenario: Scenario
    /// Whether steady playback is skipped analytically (exact; see docs/policylab.md). Default true.
    public var skipsSteadyPlayback = true

    /// A simulator for `scenario` (checked).
    public init(scenario: Scenario) throws {
        try scenario.validate()
        self.scenario = scenario
    }

    /// The rules the simulated scheduler follows — the type PrefetchScheduler uses.
    public var rules: PrefetchRules {
        PrefetchRules(workers: scenario.workers, budget: scenario.budget, keepHandlesWithin: scenario.keepHandlesWithin,
                      feedLength: scenario.feedLength, wraps: scenario.wraps)
    }

    /// Simulates one policy.
    public func run(_ policy: any PrefetchPolicy) -> SimulationMetrics {
        var engine = SimulationEngine(scenario: scenario, policy: policy, items: FeedItems(scenario),
                                      fastForward: skipsSteadyPlayback)
        return engine.run()
    }

    /// Simulates each policy over the same session, in order.
    public func compare(_ policies: [any PrefetchPolicy]) -> [SimulationMetrics] { policies.map(run) }

    /// The Prefetch module's built-in policies for comma-separated names, e.g. `window,forward2,swipeAware`.
    public static func policies(named list: String) throws -> [any PrefetchPolicy] {
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !names.isEmpty else { throw PolicyLabError.invalidParameter(name: "--policies", reason: "no policy named") }
        return try names.map { name in
            guard let policy = BuiltInPolicies.named(name) else { throw PolicyLabError.unknownPolicy(name) }
            return policy
        }
    }
}
