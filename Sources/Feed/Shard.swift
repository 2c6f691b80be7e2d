/// One of `count` disjoint parts of a feed: the items whose stable hash of `public_id` modulo `count` is `index`.
/// Every machine computes the same parts, so shards run anywhere write disjoint outputs and together cover the feed.
public struct Shard: Sendable, Hashable, CustomStringConvertible {
    /// This shard, 0-based.
    public let index: Int
    /// How many shards there are.
    public let count: Int

    /// The whole feed as one shard.
    public static let all = Shard(uncheckedIndex: 0, count: 1)

    /// The most shards a feed may be split into: 100,000.
    public static let maxCount = 100_000

    /// Shard `index` of `count`; nil unless `0 <= index < count <= maxCount`.
    public init?(index: Int, count: Int) {
        guard count >= 1, count <= Self.maxCount, index >= 0, index < count else { return nil }
        self.index = index
        self.count = count
    }

    private init(uncheckedIndex: Int, count: Int) {
        self.index = uncheckedIndex
        self.count = count
    }

    /// Parses `i/n`, e.g. `3/8`.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]) else { return nil }
        self.init(index: i, count: n)
    }

    /// Whether the item with `publicID` belongs to this shard.
    public func contains(_ publicID: String) -> Bool {
        count == 1 || Int(StableHash.fnv1a(publicID) % UInt64(count)) == index
    }

    /// The name of this shard's card file: `cards.jsonl` for the whole feed, `cards-<i>-of-<n>.jsonl` otherwise.
    public var cardFileName: String { count == 1 ? "cards.jsonl" : "cards-\(index)-of-\(count).jsonl" }

    /// `i/n`.
    public var description: String { "\(index)/\(count)" }
}
