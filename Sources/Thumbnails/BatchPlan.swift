import Feed
import Media
import Foundation

/// Which items a run renders, which it keeps as they are, and which cards belong to items gone from the feed.
struct BatchPlan {
    /// Items to render, each with its previous card (if any).
    var todo: [(FeedItem, ThumbnailCard?)] = []
    /// Cards carried over unchanged.
    var kept: [ThumbnailCard] = []
    /// Cards of items no longer in the feed (or this shard).
    var gone: [ThumbnailCard] = []
    /// Items skipped as unchanged.
    var skippedCount: Int { kept.count }

    init(items: [FeedItem], previous: [ThumbnailCard], options: ThumbnailOptions, force: Bool, output: URL) {
        var byID: [String: ThumbnailCard] = [:]
        for card in previous { byID[card.publicID] = card }
        let current = Set(items.map(\.publicID))
        gone = previous.filter { !current.contains($0.publicID) }
        let fingerprint = options.fingerprint
        let folder = OutputFolder(output)
        for item in items {
            let card = byID[item.publicID]
            if !force, let card, card.status == .ok, card.options == fingerprint,
               SourceStamp(item: item).matches(card),
               card.thumbnails.allSatisfy({ folder.contains($0) }) {
                kept.append(card)
            } else {
                todo.append((item, card))
            }
        }
    }
}

extension SourceStamp {
    /// Whether `card` was made from this version of the source.
    func matches(_ card: ThumbnailCard) -> Bool {
        matches(size: card.sourceSize, mtime: card.sourceMtime, etag: card.sourceEtag)
    }
}

extension OutputLock {
    /// The locks of one thumbnail run over `shard` in `output` (``OutputLock/forRun(in:shardFile:)``).
    static func forRun(in output: URL, shard: Shard) throws -> [OutputLock] {
        try forRun(in: output, shardFile: shard.count == 1 ? nil : shard.cardFileName)
    }
}
