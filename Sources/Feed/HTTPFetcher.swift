import EngineSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One `GET` with retries: what ``RemoteFeedLoader`` does for each page.
///
/// The timeout of an attempt is enforced here, by racing the request against a timer, rather than left to
/// `URLRequest.timeoutInterval`: swift-corelibs-foundation truncates that interval to whole seconds (0.5 s becomes an
/// immediate timeout). The session's own timeout is set a little longer, as a backstop.
struct HTTPFetcher: Sendable {
    let session: URLSession
    /// Reads each body, cutting off one that passes ``maxBytes``.
    let receiver: CrossOriginRedirectGuard
    /// The largest body accepted.
    let maxBytes: Int
    let retry: RetryPolicy
    /// Seconds an attempt may take before it counts as timed out.
    let timeout: Double

    /// The body of a 2xx answer to `request`, after retrying timeouts, lost connections and 5xx answers.
    func fetch(_ request: URLRequest) async throws -> Data {
        try await answer(request).body
    }

    /// A 2xx answer, or a 304 (Not Modified) to a conditional request: status, validators and body.
    struct Answer: Sendable {
        var status: Int
        var etag: String?
        var lastModified: String?
        var body: Data
    }

    /// The answer to `request` (2xx, or 304 when `request` is conditional), after retrying timeouts, lost
    /// connections and 5xx answers.
    func answer(_ request: URLRequest) async throws -> Answer {
        var attempt = 1
        while true {
            switch await attemptOnce(request) {
            case .success(let answer):
                return answer
            case .failure(let error, let retryable):
                guard retryable, attempt < retry.maxAttempts else { throw error }
                try await Task.sleep(nanoseconds: UInt64(retry.delay(beforeRetry: attempt) * 1_000_000_000))
                attempt += 1
            case .cancelled:
                throw CancellationError()
            }
        }
    }

    private enum Outcome {
        case success(Answer)
        case failure(FeedError, retryable: Bool)
        case cancelled
    }

    private func attemptOnce(_ request: URLRequest) async -> Outcome {
        let shownURL = Redaction.redacted(request.url!.absoluteString)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await withDeadline { [session, receiver, maxBytes] in
                try await receiver.data(for: request, in: session, limit: maxBytes)
            }
        } catch is AttemptTimedOut {
            return .failure(.timedOut(url: shownURL), retryable: true)
        } catch let tooLarge as CrossOriginRedirectGuard.BodyTooLarge {
            return .failure(.tooLarge(url: shownURL, limit: tooLarge.limit), retryable: false)
        } catch {
            if Task.isCancelled || error is CancellationError { return .cancelled }
            return Self.outcome(of: error, url: shownURL)
        }
        guard let http = response as? HTTPURLResponse else {
            return .failure(.transport(url: shownURL, reason: "not an HTTP response"), retryable: false)
        }
        let answer = Answer(status: http.statusCode, etag: http.value(forHTTPHeaderField: "ETag"),
                            lastModified: http.value(forHTTPHeaderField: "Last-Modified"), body: data)
        switch http.statusCode {
        case 200..<300: return .success(answer)
        case 304 where request.value(forHTTPHeaderField: "If-None-Match") != nil
            || request.value(forHTTPHeaderField: "If-Modified-Since") != nil:
            return .success(answer)
        case 500..<600: return .failure(.httpStatus(url: shownURL, status: http.statusCode), retryable: true)
        default: return .failure(.httpStatus(url: shownURL, status: http.statusCode), retryable: false)
        }
    }

    private struct AttemptTimedOut: Error {}

    /// The result of `operation`, or ``AttemptTimedOut`` once ``timeout`` has passed (the operation is cancelled).
    private func withDeadline<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        // Capped at about three years: any longer timeout would overflow the conversion.
        let nanoseconds = UInt64(min(max(timeout, 0), 1e8) * 1_000_000_000)
        return try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(nanoseconds: nanoseconds)
                throw AttemptTimedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    private static func outcome(of error: any Error, url: String) -> Outcome {
        guard let urlError = error as? URLError else {
            return .failure(.transport(url: url, reason: SystemErrorText.reason(error)), retryable: false)
        }
        switch urlError.code {
        case .timedOut:
            return .failure(.timedOut(url: url), retryable: true)
        case .cancelled:
            return .cancelled
        case .networkConnectionLost:
            return .failure(.transport(url: url, reason: "the connection was lost"), retryable: true)
        case .cannotConnectToHost:
            return .failure(.transport(url: url, reason: "cannot connect to the host"), retryable: false)
        case .cannotFindHost, .dnsLookupFailed:
            return .failure(.transport(url: url, reason: "the host name was not found"), retryable: false)
        case .notConnectedToInternet:
            return .failure(.transport(url: url, reason: "no network connection"), retryable: false)
        default:
            return .failure(.transport(url: url, reason: SystemErrorText.reason(urlError)), retryable: false)
        }
    }
}
