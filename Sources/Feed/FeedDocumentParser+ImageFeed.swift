import Foundation

extension FeedDocumentParser {
    /// `[{"url", "created", "updated"}]`.
    func parseImageFeed(_ root: JSONValue, _ resolver: SourceResolver) throws(FeedError) -> FeedDocument {
        guard case .array(let elements) = root else {
            throw malformed("an image feed is a JSON array, not \(root.kindDescription)")
        }
        let entries = elements.enumerated().map { (index: $0.offset, value: Optional($0.element)) }
        return collect(.imagefeed, entries) { value throws(EntryProblem) in try imageFeedItem(value, resolver) }
    }

    /// `{"url", "created", "updated"?}` with dates such as `Mar 14, 2018 6:50:24 PM` (UTC) or ISO 8601. The public
    /// ID is `public_id` or `id` when present, else the URL's path without its leading slash and extension
    /// (`https://cdn.example.com/feed/2018/cat.jpg` → `feed/2018/cat`).
    private func imageFeedItem(_ value: JSONValue, _ resolver: SourceResolver) throws(EntryProblem) -> FeedItem {
        let entry = try EntryReader(value)
        let text = try entry.requiredString("url")
        let source = try resolver.resolve(text, field: "url")
        let publicID = try entry.optionalString("public_id") ?? entry.identity("id") ?? Self.publicID(fromURL: text)
        guard let publicID, !publicID.isEmpty else {
            throw EntryProblem(reason: "\"url\" \"\(text)\" has no path to name the item by")
        }
        let ext = source.pathExtension.lowercased()
        return FeedItem(
            publicID: publicID,
            createdAt: try entry.requiredDate("created", parse: FeedDate.parse),
            source: source,
            format: ext.isEmpty ? nil : ext,
            updatedAt: try entry.optionalDate("updated", parse: FeedDate.parse)
        )
    }

    /// The path of `text` (absolute URL or relative reference) without leading slashes, query and extension.
    private static func publicID(fromURL text: String) -> String? {
        var path = SourceResolver.hasScheme(text) ? (URL(string: text)?.path ?? "") : text
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<cut]) }
        path = String(path.drop(while: { $0 == "/" || $0 == "." }))
        if let dot = path.lastIndex(of: "."), !path[dot...].contains("/") { path = String(path[..<dot]) }
        return path.isEmpty ? nil : path
    }
}
