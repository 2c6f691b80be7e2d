import Dispatch
import Foundation

/// Runs async work to completion from synchronous code (a `ParsableCommand.run()`), blocking the calling thread.
///
/// The work runs on Swift's global executor, never on the blocked thread, so it cannot deadlock on it.
enum BlockingTask {
    static func run<Value: Sendable>(
        _ work: @escaping @Sendable () async throws -> Value
    ) -> Result<Value, any Error> {
        let box = ResultBox<Value>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                box.set(.success(try await work()))
            } catch {
                box.set(.failure(error))
            }
            done.signal()
        }
        done.wait()
        return box.get()!
    }
}

/// One result handed from the task to the waiting thread. `@unchecked Sendable` is safe because `value` is only
/// read and written while holding `lock`.
private final class ResultBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<Value, any Error>?

    func set(_ result: Result<Value, any Error>) {
        lock.withLock { value = result }
    }

    func get() -> Result<Value, any Error>? {
        lock.withLock { value }
    }
}
