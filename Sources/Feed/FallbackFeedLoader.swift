/// Uses a second loader when the first fails, so that a feed still shows something.
///
/// The fallback is asked for the same cursor when the primary throws, or when the primary's *first* page has no
/// items (an empty feed is as useless as a failed one). The page then carries a warning that says why the primary
/// was not used. When both fail, ``FeedError/allSourcesFailed(_:)`` lists every reason, primary first.
/// Cancellation is passed through, never covered up.
///
/// Both loaders should understand each other's cursors, or the fallback should be one-page (like
/// ``BundledFeedLoader``, which answers any cursor but `nil` with ``FeedPage/end``).
public struct FallbackFeedLoader: FeedLoader {
    /// The loader tried first.
    public let primary: any FeedLoader
    /// The loader used when the primary fails.
    public let fallback: any FeedLoader

    /// Creates a fallback chain of two loaders; chain further by nesting.
    public init(primary: any FeedLoader, fallback: any FeedLoader) {
        self.primary = primary
        self.fallback = fallback
    }

    /// The primary's page, or the fallback's when the primary fails (or its first page is empty).
    public func loadPage(at cursor: FeedCursor?) async throws -> FeedPage {
        let primaryProblem: String
        var primaryReasons: [String]
        do {
            let page = try await primary.loadPage(at: cursor)
            guard cursor == nil, page.items.isEmpty else { return page }
            let skipped = page.skipped.isEmpty ? "" : " (\(page.skipped.count) invalid entries skipped)"
            primaryProblem = "the primary feed has no items\(skipped)"
            primaryReasons = [primaryProblem]
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            primaryProblem = "\(error)"
            primaryReasons = Self.reasons(error)
        }
        do {
            var page = try await fallback.loadPage(at: cursor)
            page.warnings.insert("\(primaryProblem); using the fallback feed", at: 0)
            return page
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            primaryReasons += Self.reasons(error)
            throw FeedError.allSourcesFailed(primaryReasons)
        }
    }

    private static func reasons(_ error: any Error) -> [String] {
        if case FeedError.allSourcesFailed(let reasons) = error { return reasons }
        return ["\(error)"]
    }
}
