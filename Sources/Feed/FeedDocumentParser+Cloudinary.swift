import Foundation

extension FeedDocumentParser {
    /// `{"resources": [...], "next_cursor": "..."}` as the Cloudinary Admin and Search APIs return it.
    func parseCloudinary(_ root: JSONValue, _ resolver: SourceResolver) throws(FeedError) -> FeedDocument {
        guard let fields = root.objectValue else {
            throw malformed("a Cloudinary listing is a JSON object, not \(root.kindDescription)")
        }
        guard case .array(let resources)? = fields["resources"] else {
            throw malformed("a Cloudinary listing needs a \"resources\" array")
        }
        let entries = resources.enumerated().map { (index: $0.offset, value: Optional($0.element)) }
        var document = collect(.cloudinary, entries) { value throws(EntryProblem) in
            try cloudinaryItem(value, resolver)
        }
        switch fields["next_cursor"] {
        case .string(let cursor)? where !cursor.isEmpty: document.nextCursor = cursor
        case nil, .null?, .string?: break
        case let other?: throw malformed("\"next_cursor\" is \(other.kindDescription), not a string")
        }
        return document
    }

    /// `{"public_id", "created_at", "secure_url" (or "url"), "format"?, "bytes"?, "width"?, "height"?, "duration"?,
    /// "etag"?}`.
    private func cloudinaryItem(_ value: JSONValue, _ resolver: SourceResolver) throws(EntryProblem) -> FeedItem {
        let entry = try EntryReader(value)
        let publicID = try entry.requiredString("public_id")
        let createdAt = try entry.requiredDate("created_at", parse: FeedDate.parseISO8601)
        let urlKey = entry.value("secure_url") != nil ? "secure_url" : "url"
        guard entry.value(urlKey) != nil else { throw EntryProblem(reason: "missing \"secure_url\"") }
        return try entry.item(publicID: publicID, createdAt: createdAt, urlKey: urlKey, resolver)
    }
}
