/// An entry of a listing that could not become a ``FeedItem``, with the reason why.
///
/// Invalid entries are never dropped silently: parsers and loaders return them in ``FeedPage/skipped``.
public struct SkippedEntry: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The 0-based position of the entry in its document: the array index, or for JSON Lines the 0-based line number;
    /// `nil` for a file of a scanned folder, which ``id`` names by its relative path.
    public var index: Int?
    /// The entry's identity when it could be read (a `public_id`, a Pexels `id`, a URL, a relative path).
    public var id: String?
    /// Why the entry was skipped, e.g. `created_at "yesterday" is not a date`.
    public var reason: String

    /// Creates a record of a skipped entry.
    public init(index: Int?, id: String?, reason: String) {
        self.index = index
        self.id = id
        self.reason = reason
    }

    /// `entry 3 (clips/a): missing "url"`, or `clips/a.mov: same public_id as clips/a.mp4` without an index.
    public var description: String {
        switch (index, id) {
        case let (index?, id?): "entry \(index) (\(id)): \(reason)"
        case let (index?, nil): "entry \(index): \(reason)"
        case let (nil, id?): "\(id): \(reason)"
        case (nil, nil): reason
        }
    }
}
