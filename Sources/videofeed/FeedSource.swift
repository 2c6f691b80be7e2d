import Feed
import Foundation

/// Feed items for `demo` (and `play`), loaded the way `videofeed feed` loads SOURCE (``FeedSourceOptions``):
/// nothing → the bundled feed; a folder → its media files; a file → a listing in any shape; an http(s) URL → the
/// remote listing, falling back to its cache and then the bundled feed.
enum FeedSource {
    static func items(_ source: String?) async throws -> [FeedItem] {
        try await items(from: FeedSourceOptions.parse(source.map { [$0] } ?? []).makeLoader(format: nil))
    }

    static func items(from loader: any FeedLoader) async throws -> [FeedItem] {
        let page = try await loader.loadAll()
        for skipped in page.skipped { Console.error("skipped feed entry: \(skipped)") }
        for warning in page.warnings { Console.error("warning: \(warning)") }
        return page.items
    }

    /// A path for Media: a file URL's path, any other URL as text.
    static func mediaPath(_ item: FeedItem) -> String {
        item.source.isFileURL ? item.source.path : item.source.absoluteString
    }
}
