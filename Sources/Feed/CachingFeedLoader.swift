/// Remembers the last good pages of a loader and serves them when the loader fails.
///
/// Every page the decoratee returns is stored in the cache under its cursor (a failure to store becomes a warning,
/// not an error). When the decoratee fails, the page stored for the same cursor is returned instead, with a warning
/// that says why and from when the copy is; with no stored page, the decoratee's error is thrown.
/// Cancellation is never covered up by the cache.
public struct CachingFeedLoader: FeedLoader {
    /// The loader whose pages are cached (typically a ``RemoteFeedLoader``).
    public let decoratee: any FeedLoader
    /// Where pages are kept (typically a ``DiskFeedPageCache``).
    public let cache: any FeedPageCache

    /// Creates a caching loader.
    public init(decoratee: any FeedLoader, cache: any FeedPageCache) {
        self.decoratee = decoratee
        self.cache = cache
    }

    /// The decoratee's page, stored on the way; the cached page if the decoratee fails.
    public func loadPage(at cursor: FeedCursor?) async throws -> FeedPage {
        let loaded: FeedPage
        do {
            loaded = try await decoratee.loadPage(at: cursor)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            guard let cached = try? await cache.cachedPage(for: cursor) else { throw error }
            var page = cached.page
            page.warnings.append(
                "\(error); using the cached copy saved \(FeedDate.string(from: cached.savedAt))")
            return page
        }
        var page = loaded
        do {
            try await cache.store(loaded, for: cursor)
        } catch {
            page.warnings.append("could not save the page to the cache: \(error)")
        }
        return page
    }
}
