/// When and how often ``RemoteFeedLoader`` tries a request again.
///
/// Only timeouts, lost connections and 5xx answers are retried; 4xx answers and other failures are final. The wait
/// before retry `n` (1-based) is `initialDelay × multiplier^(n−1)`, capped at `maxDelay`, then varied by up to
/// ±`jitter` of itself so that many clients do not retry in step.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included; 1 means no retry.
    public var maxAttempts: Int
    /// Seconds before the first retry.
    public var initialDelay: Double
    /// Growth of the wait from one retry to the next.
    public var multiplier: Double
    /// The longest wait, in seconds.
    public var maxDelay: Double
    /// The fraction (0–1) by which a wait is randomly lengthened or shortened.
    public var jitter: Double

    /// Creates a policy.
    public init(
        maxAttempts: Int, initialDelay: Double, multiplier: Double = 2, maxDelay: Double = 8, jitter: Double = 0.1
    ) {
        precondition(maxAttempts >= 1, "at least one attempt")
        self.maxAttempts = maxAttempts
        self.initialDelay = max(0, initialDelay)
        self.multiplier = max(1, multiplier)
        self.maxDelay = max(0, maxDelay)
        self.jitter = min(max(0, jitter), 1)
    }

    /// Three attempts, waiting about 0.5 s and then 1 s.
    public static let standard = RetryPolicy(maxAttempts: 3, initialDelay: 0.5)

    /// A single attempt.
    public static let never = RetryPolicy(maxAttempts: 1, initialDelay: 0)

    /// Seconds to wait before retry number `retry` (1-based), jitter included.
    public func delay(beforeRetry retry: Int) -> Double {
        var delay = initialDelay
        for _ in 1..<max(retry, 1) { delay = min(delay * multiplier, maxDelay) }
        delay = min(delay, maxDelay)
        guard jitter > 0, delay > 0 else { return delay }
        return delay * Double.random(in: (1 - jitter)...(1 + jitter))
    }
}
