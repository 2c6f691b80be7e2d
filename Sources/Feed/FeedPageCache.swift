import Foundation

/// A page saved by a cache, with when it was saved.
public struct CachedFeedPage: Sendable, Hashable {
    /// The page as it was loaded (without warnings).
    public var page: FeedPage
    /// When it was saved.
    public var savedAt: Date

    /// Creates a cached page.
    public init(page: FeedPage, savedAt: Date) {
        self.page = page
        self.savedAt = savedAt
    }
}

/// Keeps the last good page for each cursor of one feed, for ``CachingFeedLoader``.
///
/// ``DiskFeedPageCache`` is the implementation that survives restarts; tests may use an in-memory double.
public protocol FeedPageCache: Sendable {
    /// The page last stored for `cursor` (`nil`: the first page), or `nil` when there is none.
    func cachedPage(for cursor: FeedCursor?) async throws -> CachedFeedPage?
    /// Stores `page` as the last good page for `cursor`, replacing any earlier one.
    func store(_ page: FeedPage, for cursor: FeedCursor?) async throws
}
