import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Follows redirects, but removes the `Authorization` header when a redirect leaves the origin (scheme, host, port)
/// of the original request, so that credentials only ever reach the server they were meant for. Stateless.
final class CrossOriginRedirectGuard: NSObject, URLSessionTaskDelegate, Sendable {
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
        guard let original, let target = request.url, !RedactedURL.sameOrigin(original, target) else { return request }
        var request = request
        request.setValue(nil, forHTTPHeaderField: "Authorization")
        return request
    }
}
