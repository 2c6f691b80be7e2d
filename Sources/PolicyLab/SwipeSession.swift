import Prefetch

/// A viewing session: how long the first item is watched, then each swipe and how long its item is watched.
///
/// Watch times count from the moment the item's first frame is on screen — after a hit at once, after a miss when
/// the frame arrives — so every policy faces the same viewer: a slower policy makes the session longer, not the
/// viewing shorter. `videofeed play --trace` follows the same rule.
public struct SwipeSession: Sendable, Equatable {
    /// One swipe and the time its item is then watched.
    public struct Step: Sendable, Equatable {
        /// The swipe.
        public var action: SwipeAction
        /// Seconds the item is watched after its first frame is on screen.
        public var watch: Double
        /// A step.
        public init(action: SwipeAction, watch: Double) {
            self.action = action
            self.watch = watch
        }
    }

    /// Seconds the first item is watched before the first swipe.
    public var initialWatch: Double
    /// The swipes in order.
    public var steps: [Step]

    /// A session.
    public init(initialWatch: Double, steps: [Step]) {
        self.initialWatch = initialWatch
        self.steps = steps
    }

    /// A session of `swipes` swipes drawn from `model` over a feed whose item durations are `duration(index)`.
    public static func generate(model: SwipeModel, swipes: Int, seed: UInt64, feedLength: Int, wraps: Bool,
                                duration: (Int) -> Double) -> SwipeSession {
        var rng = SimRandom(seed: seed, stream: 1)
        var current = 0
        var burstLeft = 0
        func watch(_ index: Int) -> Double {
            if burstLeft > 0 {
                burstLeft -= 1
                return rng.uniform(model.burstWatch.lowerBound, model.burstWatch.upperBound)
            }
            return model.drawWatch(duration: duration(index), &rng)
        }
        let initial = watch(0)
        var steps: [Step] = []
        steps.reserveCapacity(swipes)
        for _ in 0..<swipes {
            if burstLeft == 0, rng.unit() < model.burstRate { burstLeft = rng.integer(in: model.burstLength) }
            // Only draw a jump target when jumps are possible, so a model without jumps draws what it always drew.
            let r = rng.unit()
            let action: SwipeAction
            if r < model.backRate && (current > 0 || wraps) {
                action = .previous
            } else if r >= model.backRate && r < model.backRate + model.jumpRate {
                action = .jump(rng.integer(in: 0...max(0, feedLength - 1)))
            } else {
                action = .next
            }
            current = action.target(from: current, length: feedLength, wraps: wraps)
            steps.append(Step(action: action, watch: watch(current)))
        }
        return SwipeSession(initialWatch: initial, steps: steps)
    }

    /// The highest item index the session reaches on an endless, non-wrapping feed.
    public var highestIndex: Int {
        var current = 0, highest = 0
        for step in steps {
            current = step.action.target(from: current, length: Int.max, wraps: false)
            highest = max(highest, current)
        }
        return highest
    }
}
