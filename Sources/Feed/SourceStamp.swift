import Foundation

/// What identifies a version of an item's source, for incremental runs: size and modification time of a local
/// file; the listing's ETag (else its `updated_at`) for a URL, and when the listing carries neither, the server's
/// `ETag` or `Last-Modified` from a `HEAD` request made by the worker (``RemoteStamp``). A URL whose version cannot
/// be learnt at all is always redone.
public struct SourceStamp: Sendable, Equatable {
    /// Size in bytes of a local file.
    public var size: Int64?
    /// Modification time of a local file, seconds since 1970.
    public var mtime: Double?
    /// A URL's version: the listing's ETag or `updated_at`, or the server's answer to `HEAD`.
    public var etag: String?

    /// The stamp of `item` now; nil fields when unknown (a missing local file has neither size nor mtime).
    public init(item: FeedItem) {
        if item.source.isFileURL {
            let attributes = try? FileManager.default.attributesOfItem(atPath: item.source.path)
            size = (attributes?[.size] as? NSNumber)?.int64Value
            mtime = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970
        } else {
            etag = item.etag ?? item.updatedAt.map { ISO8601DateFormatter().string(from: $0) }
        }
    }

    /// Whether the stamp needs a `HEAD` request to be known: a URL item whose listing says nothing of its version.
    public var needsRemoteCheck: Bool { size == nil && mtime == nil && etag == nil }

    /// Whether a record of `size`, `mtime` and `etag` was made from this version of the source. A stamp that knows
    /// nothing matches nothing: such an item is always redone.
    public func matches(size: Int64?, mtime: Double?, etag: String?) -> Bool {
        if self.size == nil && self.mtime == nil && self.etag == nil { return false }
        return size == self.size && mtime == self.mtime && etag == self.etag
    }
}
