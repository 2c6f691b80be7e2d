import Dispatch
import EngineSupport

/// Runs async work to completion from synchronous code (a `ParsableCommand.run()`), blocking the calling thread.
///
/// The work runs on Swift's global executor, never on the blocked thread, so it cannot deadlock on it.
enum BlockingTask {
    static func run<Value: Sendable>(
        _ work: @escaping @Sendable () async throws -> Value
    ) -> Result<Value, any Error> {
        let box = Locked<Result<Value, any Error>?>(nil)
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
        // The task always sets a result before it signals, so nil here can only be a bug.
        guard let result = box.get() else { preconditionFailure("BlockingTask: signalled without a result") }
        return result
    }
}
