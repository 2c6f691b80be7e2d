import Feed
import Foundation

/// What identifies a version of an item's source, for incremental runs: size and modification time of a local
/// file; the listing's ETag (else its `updated_at`) for a URL, and when the listing carries neither, the server's
/// `ETag` or `Last-Modified` from a `HEAD` request made by the worker (``RemoteStamp``). A URL whose version cannot
/// be learnt at all is always redone.
struct SourceStamp: Equatable {
    var size: Int64?
    var mtime: Double?
    var etag: String?

    /// The stamp of `item` now; nil fields when unknown (a missing local file has neither size nor mtime).
    init(item: FeedItem) {
        if item.source.isFileURL {
            let attributes = try? FileManager.default.attributesOfItem(atPath: item.source.path)
            size = (attributes?[.size] as? NSNumber)?.int64Value
            mtime = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970
        } else {
            etag = item.etag ?? item.updatedAt.map { ISO8601DateFormatter().string(from: $0) }
        }
    }

    /// Whether the stamp needs a `HEAD` request to be known: a URL item whose listing says nothing of its version.
    var needsRemoteCheck: Bool { size == nil && mtime == nil && etag == nil }

    /// Whether `card` was made from this version of the source.
    func matches(_ card: ThumbnailCard) -> Bool {
        if size == nil && mtime == nil && etag == nil { return false }
        return card.sourceSize == size && card.sourceMtime == mtime && card.sourceEtag == etag
    }
}
