/// Uses a second loader when the first fails, so that a feed still shows something.
///
/// The fallback is asked for the same cursor when the primary throws, or when the primary's *first* page has no
/// items (an empty feed is as useless as a failed one). The page then carries a warning that says why the primary
/// was not used. When both fail, ``FeedError/allSourcesFailed(_:)`` lists every reason, primary first (an empty
/// primary page is returned as it is, with a warning, if the fallback fails).
/// For a later page, a fallback with nothing there (an empty last page) does not end the feed: the primary's error
/// is thrown, so that the reader can try again. Cancellation is passed through, never covered up.
///
/// Both loaders should understand each other's cursors, or the fallback should be one-page (like
/// ``BundledFeedLoader``, which answers any cursor but `nil` with ``FeedPage/end``).
public struct FallbackFeedLoader: FeedLoader {
    /// The loader tried first.
    public let primary: any FeedLoader
    /// The loader used when the primary fails.
    public let fallback: any FeedLoader
    /// What the fallback is, as the warnings name it ("the bundled feed").
    public let name: String

    /// Creates a fallback chain of two loaders; chain further by nesting. `name` names the fallback in warnings.
    public init(primary: any FeedLoader, fallback: any FeedLoader, name: String = "the fallback feed") {
        self.primary = primary
        self.fallback = fallback
        self.name = name
    }

    /// The primary's page, or the fallback's when the primary fails (or its first page is empty).
    public func loadPage(at cursor: FeedCursor?) async throws -> FeedPage {
        let primaryError: any Error
        do {
            let page = try await primary.loadPage(at: cursor)
            guard cursor == nil, page.items.isEmpty else { return page }
            return try await fallBack(fromEmpty: page)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            primaryError = error
        }
        let page: FeedPage
        do {
            page = try await fallback.loadPage(at: cursor)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw FeedError.allSourcesFailed(Self.reasons(primaryError) + Self.reasons(error))
        }
        // A later page that the fallback does not have: let the reader retry the primary rather than end the feed.
        if cursor != nil, page.items.isEmpty, page.nextCursor == nil { throw primaryError }
        var served = page
        served.warnings.insert("\(primaryError); using \(name) instead", at: 0)
        return served
    }

    /// The fallback's first page in place of the primary's empty one; the empty page itself (with a warning) when
    /// the fallback fails too, since an empty listing is not an error.
    private func fallBack(fromEmpty empty: FeedPage) async throws -> FeedPage {
        let skipped = empty.skipped.isEmpty ? "" : " (\(empty.skipped.count) invalid entries skipped)"
        do {
            var page = try await fallback.loadPage(at: nil)
            page.warnings.insert("the primary feed has no items\(skipped); using \(name) instead", at: 0)
            return page
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            var page = empty
            page.warnings.append("the primary feed has no items\(skipped), and the fallback failed: \(error)")
            return page
        }
    }

    private static func reasons(_ error: any Error) -> [String] {
        if case FeedError.allSourcesFailed(let reasons) = error { return reasons }
        return ["\(error)"]
    }
}
