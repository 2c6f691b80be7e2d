import Foundation

/// Why a feed could not be loaded.
///
/// Every description is one sentence that names what failed (a path, or a URL with user info and secret query
/// values removed) and never contains credentials.
public enum FeedError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The document is not JSON, or not any of the listing shapes of ``FeedFormat``.
    case malformedDocument(source: String, reason: String)
    /// A local file or directory could not be read.
    case unreadable(path: String, reason: String)
    /// The server answered with a status outside 200–299 (after retries, for 5xx).
    case httpStatus(url: String, status: Int)
    /// The server did not answer within the timeout (after retries).
    case timedOut(url: String)
    /// The listing (its pages together) passed the loader's size limit (an endless or bloated listing, or pages
    /// that never end); it was cut off.
    case tooLarge(url: String, limit: Int)
    /// The request failed below HTTP: connection refused, host not found, connection lost.
    case transport(url: String, reason: String)
    /// The `Authorization` value could not be read from its environment variable or file.
    case credentialsUnavailable(reason: String)
    /// `Fixtures/feed.json` was found in none of the places searched.
    case bundledFeedNotFound(searched: [String])
    /// A source the loaders cannot read: not a directory, file, or http(s) URL.
    case unsupportedSource(String)
    /// A cursor this loader did not hand out.
    case invalidCursor(FeedCursor, reason: String)
    /// Every loader of a fallback chain failed; the reasons in order, primary first.
    case allSourcesFailed([String])

    /// One sentence saying what failed and where.
    public var description: String {
        switch self {
        case .malformedDocument(let source, let reason):
            "\(source) is not a valid feed document: \(reason)"
        case .unreadable(let path, let reason):
            "cannot read \(path): \(reason)"
        case .httpStatus(let url, let status):
            "GET \(url) failed with HTTP \(status) (\(HTTPStatusText.text(for: status)))"
        case .timedOut(let url):
            "GET \(url) timed out"
        case .tooLarge(let url, let limit):
            "GET \(url): the listing is larger than the limit of \(limit) bytes (--max-listing-size); cut off"
        case .transport(let url, let reason):
            "GET \(url) failed: \(reason)"
        case .credentialsUnavailable(let reason):
            "no Authorization credentials: \(reason)"
        case .bundledFeedNotFound(let searched):
            "bundled feed Fixtures/feed.json not found (searched: \(searched.joined(separator: ", ")))"
        case .unsupportedSource(let source):
            "unsupported feed source \(source): expected a directory, a manifest file or an http(s) URL"
        case .invalidCursor(let cursor, let reason):
            "invalid cursor \(cursor): \(reason)"
        case .allSourcesFailed(let reasons):
            "every feed source failed: " + reasons.joined(separator: "; then ")
        }
    }
}

/// Reason phrases of the HTTP statuses feeds meet, for error messages.
enum HTTPStatusText {
    static func text(for status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 100..<200: "Informational"
        case 300..<400: "Redirection"
        case 400..<500: "Client Error"
        case 500..<600: "Server Error"
        default: "Unknown Status"
        }
    }
}
