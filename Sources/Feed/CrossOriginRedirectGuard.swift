import EngineSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of a ``RemoteFeedLoader``'s session.
///
/// Follows redirects, but removes the `Authorization` header when a redirect leaves the origin (scheme, host, port)
/// of the original request, so that credentials only ever reach the server they were meant for.
///
/// Receives each answer's body itself (``data(for:in:limit:)``), so that a body larger than its limit — an endless
/// listing — is cut off as it arrives instead of growing in memory, and so that cancelling the waiting Swift task
/// cancels the transfer (swift-corelibs-foundation's `data(for:)` goes on downloading after it is cancelled).
/// Its only mutable state, the transfers, is behind a ``Locked``.
final class CrossOriginRedirectGuard: NSObject, URLSessionDataDelegate, Sendable {
    /// A body that grew past its limit.
    struct BodyTooLarge: Error {
        let limit: Int
    }

    private struct Transfer {
        var body = Data()
        var response: URLResponse?
        let limit: Int
        let continuation: CheckedContinuation<(Data, URLResponse), any Error>
    }

    /// The waiting transfers by task identifier.
    private let transfers = Locked<[Int: Transfer]>([:])

    /// The body and response of `request`, read through this delegate; fails with ``BodyTooLarge`` as soon as the
    /// body (or its announced length) passes `limit` bytes, and with `URLError.cancelled` when the calling task is
    /// cancelled.
    func data(for request: URLRequest, in session: URLSession, limit: Int) async throws -> (Data, URLResponse) {
        let task = session.dataTask(with: request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // A task cancelled before its transfer is registered: the cancel handler may already have run and
                // found nothing to end, so nothing is started and the waiter is answered here. The flag is read under
                // the lock the handler ends a transfer under: cancelled later, the handler finds the transfer.
                let registered = transfers.withLock { all -> Bool in
                    if Task.isCancelled { return false }
                    all[task.taskIdentifier] = Transfer(limit: limit, continuation: continuation)
                    return true
                }
                if registered {
                    task.resume()
                } else {
                    continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            // Resume the waiter now: the task's completion may come late behind a flood of received data.
            self.end(task, with: CancellationError())
            task.cancel()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        let tooLarge = transfers.withLock { all -> Bool in
            guard var transfer = all[dataTask.taskIdentifier] else { return false }
            transfer.response = response
            all[dataTask.taskIdentifier] = transfer
            return response.expectedContentLength > Int64(transfer.limit)
        }
        if tooLarge {
            fail(dataTask)
            completionHandler(.cancel)
        } else {
            completionHandler(.allow)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let tooLarge = transfers.withLock { all -> Bool in
            // No copy of the transfer is held while appending, so the body grows in place, never copied.
            guard let count = all[dataTask.taskIdentifier]?.body.count,
                  let limit = all[dataTask.taskIdentifier]?.limit else { return false }
            guard count + data.count <= limit else { return true }
            all[dataTask.taskIdentifier]?.body.append(data)
            return false
        }
        if tooLarge {
            fail(dataTask)
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            transfer.continuation.resume(throwing: error)
        } else if let response = transfer.response ?? task.response {
            transfer.continuation.resume(returning: (transfer.body, response))
        } else {
            transfer.continuation.resume(throwing: URLError(.badServerResponse))
        }
    }

    /// Ends `task`'s transfer with ``BodyTooLarge``; the task's own completion then finds nothing to resume.
    private func fail(_ task: URLSessionTask) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        transfer.continuation.resume(throwing: BodyTooLarge(limit: transfer.limit))
    }

    /// Ends `task`'s transfer with `error` (if it is still waiting).
    private func end(_ task: URLSessionTask, with error: any Error) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        transfer.continuation.resume(throwing: error)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(Self.stripping(request, from: task.originalRequest?.url))
    }

    static func stripping(_ request: URLRequest, from original: URL?) -> URLRequest {
        guard let original, let target = request.url, !URLOrigin.same(original, target) else { return request }
        var request = request
        request.setValue(nil, forHTTPHeaderField: "Authorization")
        return request
    }
}
