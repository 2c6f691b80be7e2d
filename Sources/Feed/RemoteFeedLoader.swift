import EngineSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Loads a listing over HTTP(S) with `GET`, a page per request, paging the way each API does.
///
/// - ``FeedFormat/cloudinary``: `max_results=<pageSize>`, then `next_cursor=<cursor of the previous page>`.
/// - ``FeedFormat/pexels``: `page=<n>&per_page=<pageSize>`, or with ``PexelsPaging/followNextPage`` the listing's own
///   `next_page` URL (only when it has the same scheme, host and port as ``url``).
/// - ``FeedFormat/manifest`` and ``FeedFormat/imagefeed``: one page.
/// - `nil` (detect): the first request has no paging parameters; later pages follow what the first page showed.
///
/// The optional `Authorization` header comes from an ``AuthorizationSource`` and is only sent to the origin of
/// ``url`` (also not across redirects to another origin). Timeouts, lost connections and 5xx answers are retried per
/// ``RetryPolicy``; 4xx answers are not. Errors are ``FeedError`` values that name the URL with secrets removed.
public final class RemoteFeedLoader: FeedLoader {
    /// How Pexels listings are paged.
    public enum PexelsPaging: Sendable, Hashable {
        /// Ask for `page=n` with `per_page`.
        case pageNumbers
        /// Follow the `next_page` URL each page gives.
        case followNextPage
    }

    /// The listing's URL (first page), possibly with query parameters of its own.
    public let url: URL
    /// The listing's shape, or `nil` to detect it from the first answer.
    public let format: FeedFormat?
    /// Items per page to ask for (`max_results`, `per_page`); `nil` leaves it to the server.
    public let pageSize: Int?
    /// How Pexels listings are paged.
    public let pexelsPaging: PexelsPaging
    /// Where the `Authorization` header comes from, if one is sent.
    public let authorization: AuthorizationSource?
    /// Seconds to wait for an answer before the attempt counts as timed out.
    public let timeout: Double
    /// Retries of timeouts, lost connections and 5xx answers.
    public let retry: RetryPolicy
    /// The display the Pexels rendition is chosen for.
    public let displaySize: DisplaySize
    /// The most bytes a listing may take, all of its pages together from the first page on: a larger (or endless)
    /// body, or pages that never end, fail with ``FeedError/tooLarge(url:limit:)`` as soon as they pass it, never
    /// held whole in memory. Loading the first page (cursor `nil`) starts the count again.
    public let maxListingBytes: Int

    /// The default ``maxListingBytes``: 64 MiB, room for about 200,000 items of a typical listing.
    public static let defaultMaxListingBytes = 64 << 20

    /// Bytes of the listing read so far since its first page.
    private let read = Locked(0)

    private let environment: [String: String]
    private let session: URLSession
    private let receiver: CrossOriginRedirectGuard

    /// Creates a loader for the listing at `url` (`http` or `https`; anything else fails on load with
    /// ``FeedError/unsupportedSource(_:)``). `environment` is where ``AuthorizationSource/environment(_:)`` reads.
    public init(
        url: URL,
        format: FeedFormat?,
        pageSize: Int? = nil,
        pexelsPaging: PexelsPaging = .pageNumbers,
        authorization: AuthorizationSource? = nil,
        timeout: Double = 15,
        retry: RetryPolicy = .standard,
        displaySize: DisplaySize = .portraitFullHD,
        maxListingBytes: Int = RemoteFeedLoader.defaultMaxListingBytes,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.maxListingBytes = max(1, maxListingBytes)
        self.url = url
        self.format = format
        self.pageSize = pageSize.map { max(1, $0) }
        self.pexelsPaging = pexelsPaging
        self.authorization = authorization
        self.timeout = timeout
        self.retry = retry
        self.displaySize = displaySize
        self.environment = environment
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Self.backstopTimeout(timeout)
        configuration.timeoutIntervalForResource = max(timeout * 4, 60)
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        receiver = CrossOriginRedirectGuard()
        session = URLSession(configuration: configuration, delegate: receiver, delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Loads the page at `cursor` (`nil`: the first page).
    public func loadPage(at cursor: FeedCursor?) async throws -> FeedPage {
        guard Self.isHTTP(url) else { throw FeedError.unsupportedSource(Redaction.redacted(url.absoluteString)) }
        guard let pageURL = try pageURL(for: cursor) else { return .end }
        let request = try request(for: pageURL)
        if cursor == nil { read.set(0) }
        let left = maxListingBytes - read.get()
        guard left > 0 else {
            throw FeedError.tooLarge(url: Redaction.redacted(url.absoluteString), limit: maxListingBytes)
        }
        let data: Data
        do {
            data = try await HTTPFetcher(session: session, receiver: receiver, maxBytes: left, retry: retry,
                                         timeout: timeout).fetch(request)
        } catch FeedError.tooLarge(let url, _) {
            // The limit is the listing's, whatever was left of it for this page.
            throw FeedError.tooLarge(url: url, limit: maxListingBytes)
        }
        read.withLock { $0 += data.count }
        let parser = FeedDocumentParser(
            format: format, baseURL: pageURL, displaySize: displaySize, listedAt: Date(),
            sourceName: Redaction.redacted(pageURL.absoluteString))
        let document = try parser.parse(data)
        return FeedPage(
            items: document.items, skipped: document.skipped, nextCursor: nextCursor(after: document, at: cursor))
    }

    /// The `GET` of `pageURL`, with the `Authorization` header when it goes to the listing's origin.
    private func request(for pageURL: URL) throws -> URLRequest {
        var request = URLRequest(
            url: pageURL, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: Self.backstopTimeout(timeout))
        request.httpMethod = "GET"
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let authorization, URLOrigin.same(pageURL, url) {
            let value = try authorization.headerValue(environment: environment)
            request.setValue(value, forHTTPHeaderField: "Authorization")
        }
        return request
    }

    /// What names one version of the listing's first page: the server's `ETag` and `Last-Modified`, and a hash of
    /// the body (for a server that sends neither).
    public struct Version: Sendable, Hashable {
        public var etag: String?
        public var lastModified: String?
        public var digest: UInt64
    }

    /// The first page's version now, asked with `If-None-Match` / `If-Modified-Since` from `known`: a `304 Not
    /// Modified` answer gives `known` back without a body. The first page changes when an item arrives or goes in
    /// listings sorted newest first (Cloudinary's, Pexels', a manifest); a listing that changes only past its first
    /// page is seen when its first page changes too.
    /// - Throws: a ``FeedError`` as ``loadPage(at:)`` does.
    public func firstPageVersion(ifChangedFrom known: Version?) async throws -> Version {
        guard Self.isHTTP(url) else { throw FeedError.unsupportedSource(Redaction.redacted(url.absoluteString)) }
        guard let pageURL = try pageURL(for: nil) else { throw FeedError.unsupportedSource(Redaction.redacted(url.absoluteString)) }
        var request = try request(for: pageURL)
        if let etag = known?.etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        if let modified = known?.lastModified { request.setValue(modified, forHTTPHeaderField: "If-Modified-Since") }
        let answer = try await HTTPFetcher(session: session, receiver: receiver, maxBytes: maxListingBytes,
                                           retry: retry, timeout: timeout).answer(request)
        if answer.status == 304, let known { return known }
        return Version(etag: answer.etag, lastModified: answer.lastModified,
                       digest: StableHash.fnv1a(bytes: answer.body))
    }

    /// URLSession's own timeout, whole seconds and above ``timeout``: a backstop to ``HTTPFetcher``'s precise one.
    private static func backstopTimeout(_ timeout: Double) -> Double {
        (max(timeout, 0) + 1).rounded(.up)
    }

    static func isHTTP(_ url: URL) -> Bool {
        let scheme = url.scheme?.lowercased()
        return (scheme == "http" || scheme == "https") && url.host != nil
    }
}
