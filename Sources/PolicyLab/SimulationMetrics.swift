/// What one simulated run measured, with the same definitions as FeedPlayer's metrics where both have them.
public struct SimulationMetrics: Sendable, Codable, Equatable {
    /// The policy's name.
    public var policy: String
    /// Moves to a different item.
    public var swipes = 0
    /// Swipes whose first frame was ready at once.
    public var hits = 0
    /// Swipes that had to wait.
    public var misses = 0
    /// Time to first frame over all swipes, in milliseconds (a hit counts 0), nearest-rank percentiles.
    public var timeToFirstFrameP50: Double = 0
    public var timeToFirstFrameP95: Double = 0
    public var timeToFirstFrameP99: Double = 0
    /// Mean time to first frame, in milliseconds.
    public var timeToFirstFrameMean: Double = 0
    /// Times playback had no frame when one was due, and the seconds it waited in all (a stall the viewer swiped
    /// away from counts until the swipe).
    public var stalls = 0
    public var stallSeconds: Double = 0
    /// Every frame a job decoded (kept, refused over the budget, or arriving after its item was no longer wanted).
    public var framesDecoded = 0
    /// Frames shown: first frames on swipes and playback frames.
    public var framesShown = 0
    /// Decoded but never shown: `framesDecoded - framesShown`, and their bytes.
    public var wastedFrames = 0
    public var wastedBytes = 0
    /// Prefetch jobs cancelled (before or while running), as FeedPlayer counts them.
    public var cancellations = 0
    /// Jobs started.
    public var jobsStarted = 0
    /// The most decoded bytes held at once, and the budget.
    public var peakDecodedBytes = 0
    public var memoryBudget = 0
    /// Virtual seconds the session lasted.
    public var virtualSeconds: Double = 0
    /// Each swipe's outcome, when the scenario asks for them (``Scenario/recordsSwipes``).
    public var outcomes: [SwipeOutcome]?

    /// Empty metrics for `policy`.
    public init(policy: String) { self.policy = policy }

    /// Hits per swipe, 0 without swipes.
    public var hitRate: Double { swipes == 0 ? 0 : Double(hits) / Double(swipes) }
}

/// What one swipe met, for comparing a simulated session with a live one swipe by swipe.
public struct SwipeOutcome: Sendable, Codable, Equatable {
    /// The swipe's number, from 1, counting only moves to a different item (as `videofeed play` numbers them when
    /// every step moves).
    public var swipe: Int
    /// The session step, from 1.
    public var step: Int
    /// The step's action, e.g. `n`, `p`, `j4`.
    public var action: String
    /// The item swiped to.
    public var index: Int
    /// Whether its first frame was ready at once.
    public var hit: Bool
    /// Milliseconds until its first frame (0 for a hit); nil if the session ended first.
    public var timeToFirstFrameMs: Double?
    /// Virtual seconds from the session start to the swipe.
    public var time: Double
}
