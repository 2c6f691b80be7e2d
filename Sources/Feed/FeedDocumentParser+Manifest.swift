import Foundation

extension FeedDocumentParser {
    /// A native manifest: a JSON array of entries, or a single entry (JSON Lines with one line).
    func parseManifest(_ root: JSONValue, _ resolver: SourceResolver) throws(FeedError) -> FeedDocument {
        let entries: [(index: Int, value: JSONValue?)]
        switch root {
        case .array(let elements): entries = elements.enumerated().map { ($0.offset, $0.element) }
        case .object: entries = [(0, root)]
        default: throw malformed("a manifest is a JSON array or JSON Lines, not \(root.kindDescription)")
        }
        return collect(.manifest, entries) { value throws(EntryProblem) in try manifestItem(value, resolver) }
    }

    /// `{"public_id", "created_at", "url", "duration"?, "width"?, "height"?, "bytes"?, "format"?, "updated_at"?,
    /// "etag"?}`.
    func manifestItem(_ value: JSONValue, _ resolver: SourceResolver) throws(EntryProblem) -> FeedItem {
        let entry = try EntryReader(value)
        return try entry.item(publicID: try entry.requiredString("public_id"),
                              createdAt: try entry.requiredDate("created_at", parse: FeedDate.parseISO8601),
                              urlKey: "url", resolver)
    }
}
