import Dispatch

/// Runs blocking file-system work on a Dispatch queue so that it never holds a thread of Swift's cooperative pool
/// (which has as few threads as the machine has cores).
enum BlockingWork {
    private static let queue = DispatchQueue(label: "VideoFeedEngine.Feed.blocking-io", attributes: .concurrent)

    /// Runs `work` on the blocking-work queue and returns its result.
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result(catching: work))
            }
        }
    }
}
