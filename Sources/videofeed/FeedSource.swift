import Feed
import Foundation

/// Feed items for `demo` (and `play`), loaded the way `videofeed feed` loads SOURCE (``FeedSourceOptions``):
/// nothing → the bundled feed; a folder → its media files; a file → a listing in any shape; an http(s) URL → the
/// remote listing, falling back to its cache (and, for `play`, then to the bundled feed, with a warning).
enum FeedSource {
    /// The items of `source` for a batch that writes per item (`demo`): a URL that fails is never replaced by the
    /// bundled feed.
    static func page(_ source: String?) async throws -> FeedPage {
        try await page(from: FeedSourceOptions.parse(source.map { [$0] } ?? []).makeLoader(format: nil, for: .batch))
    }

    /// Every page of `loader` as one, with its skipped entries and warnings printed to stderr.
    static func page(from loader: any FeedLoader) async throws -> FeedPage {
        let page = try await loader.loadAll()
        for skipped in page.skipped { Console.error("skipped feed entry: \(Console.safe(skipped.description))") }
        for warning in page.warnings { Console.warning(Console.safe(warning)) }
        if page.nextCursor != nil {
            Console.warning("the listing has more pages than are read at once; only the first \(page.items.count) items are used")
        }
        return page
    }

    /// A path for Media: a file URL's path, any other URL as text.
    static func mediaPath(_ item: FeedItem) -> String {
        item.source.isFileURL ? item.source.path : item.source.absoluteString
    }
}
