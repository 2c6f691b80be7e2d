/// One page of a listing, as a ``FeedLoader`` returns it.
public struct FeedPage: Sendable, Hashable, Codable {
    /// The valid items of the page, in listing order.
    public var items: [FeedItem]
    /// The entries that were not valid items, with their reasons.
    public var skipped: [SkippedEntry]
    /// The cursor of the following page, `nil` on the last page.
    public var nextCursor: FeedCursor?
    /// Problems that were recovered from while producing this page, one sentence each — for example that the remote
    /// listing failed and the page comes from the cache. Empty for a page served as asked.
    public var warnings: [String]

    /// Creates a page.
    public init(
        items: [FeedItem], skipped: [SkippedEntry] = [], nextCursor: FeedCursor? = nil, warnings: [String] = []
    ) {
        self.items = items
        self.skipped = skipped
        self.nextCursor = nextCursor
        self.warnings = warnings
    }

    /// The page after the last page of a listing: no items, no next cursor.
    public static let end = FeedPage(items: [])
}
