/// How a listing changed between two reads, item by item: by public ID, and for an item in both, by what names its
/// version (source, size, modification time, `updated_at`, ETag).
public struct FeedChange: Sendable, Hashable {
    /// Items whose public ID is new, sorted by public ID.
    public var added: [FeedItem]
    /// Items whose version changed, as they are now, sorted by public ID.
    public var changed: [FeedItem]
    /// Items that are gone, as they were, sorted by public ID.
    public var removed: [FeedItem]

    /// Creates a change.
    public init(added: [FeedItem] = [], changed: [FeedItem] = [], removed: [FeedItem] = []) {
        self.added = added
        self.changed = changed
        self.removed = removed
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }

    /// Whether `item` is another version of `previous` (the same public ID).
    static func isNewVersion(_ item: FeedItem, of previous: FeedItem) -> Bool {
        previous.source != item.source || previous.bytes != item.bytes || previous.createdAt != item.createdAt
            || previous.updatedAt != item.updatedAt || previous.etag != item.etag
    }

    /// The change from `old` to `new`.
    static func between(_ old: [FeedItem], _ new: [FeedItem]) -> FeedChange {
        let before = Dictionary(old.map { ($0.publicID, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(new.map { ($0.publicID, $0) }, uniquingKeysWith: { first, _ in first })
        var change = FeedChange()
        for (id, item) in after {
            guard let previous = before[id] else {
                change.added.append(item)
                continue
            }
            if isNewVersion(item, of: previous) { change.changed.append(item) }
        }
        change.removed = before.filter { after[$0.key] == nil }.map(\.value)
        change.added.sort { $0.publicID < $1.publicID }
        change.changed.sort { $0.publicID < $1.publicID }
        change.removed.sort { $0.publicID < $1.publicID }
        return change
    }
}
