/// Loads a listing one page at a time.
///
/// A loader is a value that can be shared between tasks. `loadPage(at: nil)` loads the first page; each page names
/// the cursor of the next one in ``FeedPage/nextCursor`` until the last page, whose next cursor is `nil`. A loader
/// that reads a whole listing at once (a directory, a manifest file) returns everything on the first page and
/// answers any other cursor with ``FeedPage/end``.
///
/// Errors are ``FeedError`` values (or `CancellationError` when the task is cancelled).
public protocol FeedLoader: Sendable {
    /// Loads the page that starts at `cursor`; `nil` is the first page.
    func loadPage(at cursor: FeedCursor?) async throws -> FeedPage
}

extension FeedLoader {
    /// Loads pages from the first until the last (or until `maxPages`), concatenating items, skipped entries and
    /// warnings, without removing duplicates (``Feed`` does that). Stops if a cursor comes back a second time.
    public func loadAll(maxPages: Int = 1_000) async throws -> FeedPage {
        var result = FeedPage(items: [])
        var cursor: FeedCursor?
        var seen: Set<FeedCursor> = []
        for _ in 0..<maxPages {
            let page = try await loadPage(at: cursor)
            result.items += page.items
            result.skipped += page.skipped
            result.warnings += page.warnings
            guard let next = page.nextCursor, seen.insert(next).inserted else { return result }
            cursor = next
        }
        result.nextCursor = cursor
        return result
    }
}
