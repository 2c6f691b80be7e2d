import Prefetch

/// Everything one simulated run depends on except the policy: the session, the feed, the costs, the resources.
public struct Scenario: Sendable {
    /// The viewer's swipes and watch times.
    public var session: SwipeSession
    /// Items in the feed.
    public var feedLength: Int
    /// Whether the feed wraps around.
    public var wraps: Bool
    /// What preparing an item costs.
    public var costs: CostProfile
    /// Draws the durations of items whose costs give none.
    public var durationModel: SwipeModel
    /// Seed of the item durations.
    public var seed: UInt64
    /// Background worker lanes, as FeedPlayer's `workers` (one more lane is kept for the item on screen).
    public var workers: Int
    /// CPU cores the lanes share.
    public var cores: Int
    /// Other work on the machine: this many always-runnable threads at nice 0 (weight 1024, at most a core each)
    /// compete with the lanes for the cores. May be fractional (an average). Default 0: the machine is ours.
    public var backgroundLoad: Double = 0
    /// Maximum decoded bytes held, as FeedPlayer's `memoryBudget`.
    public var budget: Int
    /// Open decoders are kept within this distance of the current item (PrefetchScheduler's default 1).
    public var keepHandlesWithin: Int
    /// The network, when items are remote; nil for local files.
    public var network: NetworkModel?
    /// Whether the metrics list every swipe's outcome (``SimulationMetrics/outcomes``). Default false.
    public var recordsSwipes = false

    /// A scenario; the defaults are FeedPlayer's on this 2-core machine.
    public init(session: SwipeSession, feedLength: Int, wraps: Bool = false, costs: CostProfile = .builtIn,
                durationModel: SwipeModel = .mixed, seed: UInt64 = 1, workers: Int = 2, cores: Int = 2,
                budget: Int = 256 << 20, keepHandlesWithin: Int = 1, network: NetworkModel? = nil) {
        self.session = session
        self.feedLength = feedLength
        self.wraps = wraps
        self.costs = costs
        self.durationModel = durationModel
        self.seed = seed
        self.workers = workers
        self.cores = cores
        self.budget = budget
        self.keepHandlesWithin = keepHandlesWithin
        self.network = network
    }

    /// A scenario whose session is drawn from `model`: `swipes` swipes over a feed long enough never to end
    /// (unless `feedLength` is given), item durations from the same model.
    public static func generated(model: SwipeModel, swipes: Int, seed: UInt64, feedLength: Int? = nil,
                                 wraps: Bool = false, costs: CostProfile = .builtIn) -> Scenario {
        let length = max(1, feedLength ?? swipes + 1)
        let durations = FeedItems.durations(count: length, costs: costs, model: model, seed: seed)
        let session = SwipeSession.generate(model: model, swipes: swipes, seed: seed, feedLength: length,
                                            wraps: wraps, duration: { durations[$0] })
        return Scenario(session: session, feedLength: length, wraps: wraps, costs: costs, durationModel: model,
                        seed: seed)
    }

    /// Throws when a resource is out of range.
    public func validate() throws {
        guard feedLength >= 1 else { throw PolicyLabError.invalidParameter(name: "--items", reason: "need at least 1 item") }
        guard workers >= 1 else { throw PolicyLabError.invalidParameter(name: "--workers", reason: "need at least 1") }
        guard cores >= 1 else { throw PolicyLabError.invalidParameter(name: "--cores", reason: "need at least 1") }
        guard backgroundLoad >= 0, backgroundLoad.isFinite else {
            throw PolicyLabError.invalidParameter(name: "--background-load", reason: "must be 0 or more")
        }
        guard budget > 0 else { throw PolicyLabError.invalidParameter(name: "--budget", reason: "must be positive") }
        try costs.validate(path: "costs")
        try durationModel.validate()
    }
}

/// The simulated feed's items: duration, costs, frames per loop.
struct FeedItems {
    var duration: [Double]
    var costIndex: [Int]

    static func durations(count: Int, costs: CostProfile, model: SwipeModel, seed: UInt64) -> [Double] {
        var rng = SimRandom(seed: seed, stream: 2)
        return (0..<count).map { i in
            let drawn = model.drawDuration(&rng)  // drawn for every item, so the sequence does not depend on costs
            return costs.items[i % costs.items.count].duration ?? drawn
        }
    }

    init(_ scenario: Scenario) {
        duration = Self.durations(count: scenario.feedLength, costs: scenario.costs, model: scenario.durationModel,
                                  seed: scenario.seed)
        costIndex = (0..<scenario.feedLength).map { $0 % scenario.costs.items.count }
    }
}
