import Foundation

/// A parsed listing document: its valid items, its skipped entries, and how the listing continues.
public struct FeedDocument: Sendable, Hashable {
    /// The shape the document had (given or detected).
    public var format: FeedFormat
    /// The valid entries, in document order, without duplicate public IDs.
    public var items: [FeedItem]
    /// The invalid and duplicate entries, with their reasons.
    public var skipped: [SkippedEntry]
    /// Cloudinary's `next_cursor`, when there is a following page.
    public var nextCursor: String?
    /// Pexels' `page`, when stated.
    public var page: Int?
    /// Pexels' `next_page` URL, when there is a following page.
    public var nextPageURL: URL?
    /// Pexels' `total_results`, when stated.
    public var totalResults: Int?

    /// Creates a parsed document.
    public init(
        format: FeedFormat, items: [FeedItem], skipped: [SkippedEntry], nextCursor: String? = nil,
        page: Int? = nil, nextPageURL: URL? = nil, totalResults: Int? = nil
    ) {
        self.format = format
        self.items = items
        self.skipped = skipped
        self.nextCursor = nextCursor
        self.page = page
        self.nextPageURL = nextPageURL
        self.totalResults = totalResults
    }

    /// Whether the document says a following page exists.
    public var hasNextPage: Bool { nextCursor != nil || nextPageURL != nil }
}
