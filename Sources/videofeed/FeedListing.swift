import EngineSupport
import Feed
import Foundation

/// What `videofeed feed` prints: the items of a feed as an aligned table or a JSON manifest, and on the side the
/// warnings and skipped entries met while loading.
struct FeedListing: Sendable {
    let loader: any FeedLoader
    let limit: Int?
    let json: Bool

    struct Output: Sendable {
        /// For stdout.
        var text: String
        /// For stderr, one line each.
        var diagnostics: [String]
        /// Entries skipped as invalid: items that failed, so `feed` exits 1.
        var invalidEntries = 0
    }

    /// Loads as many pages as `limit` needs (all without a limit) and formats them.
    func render() async throws -> Output {
        let feed = Feed(loader: loader, prefetchDistance: 0)
        try await feed.load(atLeast: limit ?? Int.max)
        var items = await feed.items
        if let limit { items = Array(items.prefix(limit)) }
        var diagnostics = await feed.warnings.map { "WARNING: \(Console.safe($0))" }
        diagnostics += await feed.skipped.map { "skipped: \(Console.safe($0.description))" }
        let duplicates = await feed.duplicateCount
        if duplicates > 0 { diagnostics.append("skipped: \(duplicates) items repeated on later pages") }
        return Output(text: try json ? Self.json(items) : Self.table(items), diagnostics: diagnostics,
                      invalidEntries: await feed.skipped.count)
    }

    static func json(_ items: [FeedItem]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(items), as: UTF8.self) + "\n"
    }

    /// Three left-aligned columns separated by two spaces; dates in UTC, local sources as paths, URLs redacted
    /// (``Redaction/redacted(_:)``: a table is read and pasted; `--json` is a manifest to load again and keeps them).
    static func table(_ items: [FeedItem]) -> String {
        let rows = [["PUBLIC_ID", "CREATED_AT", "SOURCE"]] + items.map { item -> [String] in
            let source = item.source.isFileURL ? item.source.path : Redaction.redacted(item.source.absoluteString)
            return [
                // Control characters shown as escapes: a newline must not split a row, an ESC not reach the terminal.
                Console.safe(item.publicID),
                item.createdAt.formatted(Date.ISO8601FormatStyle()),
                Console.safe(source),
            ]
        }
        let widths = (0..<2).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row[0].padding(toLength: widths[0], withPad: " ", startingAt: 0) + "  "
                + row[1].padding(toLength: widths[1], withPad: " ", startingAt: 0) + "  " + row[2]
        }.joined(separator: "\n") + "\n"
    }
}
