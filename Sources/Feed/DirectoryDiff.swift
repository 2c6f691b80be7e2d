/// How a directory changed between two listings, compared by (public ID, size, modification time).
public struct DirectoryDiff: Sendable, Hashable {
    /// Items whose public ID is new, sorted by public ID.
    public var added: [FeedItem]
    /// Items whose size or modification time changed, as they are now, sorted by public ID.
    public var changed: [FeedItem]
    /// Items that are gone, as they were, sorted by public ID.
    public var removed: [FeedItem]

    /// Creates a diff.
    public init(added: [FeedItem] = [], changed: [FeedItem] = [], removed: [FeedItem] = []) {
        self.added = added
        self.changed = changed
        self.removed = removed
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }

    /// The difference from `old` to `new`.
    static func between(_ old: [FeedItem], _ new: [FeedItem]) -> DirectoryDiff {
        let before = Dictionary(old.map { ($0.publicID, $0) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(new.map { ($0.publicID, $0) }, uniquingKeysWith: { first, _ in first })
        var diff = DirectoryDiff()
        for (id, item) in after {
            guard let previous = before[id] else {
                diff.added.append(item)
                continue
            }
            if previous.bytes != item.bytes || previous.createdAt != item.createdAt { diff.changed.append(item) }
        }
        diff.removed = before.filter { after[$0.key] == nil }.map(\.value)
        diff.added.sort { $0.publicID < $1.publicID }
        diff.changed.sort { $0.publicID < $1.publicID }
        diff.removed.sort { $0.publicID < $1.publicID }
        return diff
    }
}
