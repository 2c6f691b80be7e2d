import Foundation

/// What identifies a version of an item's source, for incremental runs: size and modification time of a local
/// file (the file a symbolic link points to, not the link); the listing's ETag (else its `updated_at`) for a URL,
/// and when the listing carries neither, the server's `ETag` or `Last-Modified` from a `HEAD` request made by the
/// worker (``RemoteStamp``). A URL whose version cannot be learnt at all is always redone.
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
            // The file a link points to, not the link: replacing or removing a symlinked source's target is a new
            // version (or none), as it is for a plain file.
            let identity = FileIdentity(path: item.source.path)
            size = identity?.size
            mtime = identity?.modificationTime
        } else {
            etag = item.etag ?? item.updatedAt.map { ISO8601DateFormatter().string(from: $0) }
        }
    }

    /// A stamp of these fields.
    public init(size: Int64?, mtime: Double?, etag: String? = nil) {
        self.size = size
        self.mtime = mtime
        self.etag = etag
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

/// Which file a path names now, and which version of it, more strictly than ``SourceStamp``: the device and inode
/// (another file moved in its place), the size, and the modification and status-change times to the nanosecond. The
/// status-change time (`ctime`) moves on every change to the file, including one that puts its modification time
/// back (`utimes`), so a file truncated and restored with its old time is not the same version. Read with `stat()`,
/// which follows symbolic links.
public struct FileIdentity: Sendable, Equatable {
    /// The file system's device number.
    public var device: UInt64
    /// The inode number.
    public var inode: UInt64
    /// Size in bytes.
    public var size: Int64
    /// Modification time: seconds and nanoseconds since 1970.
    public var modified: timespec
    /// Status-change time: seconds and nanoseconds since 1970.
    public var changed: timespec

    /// The identity of the file at `path` (following links); nil when there is none (or it cannot be read).
    /// The corresponding POSIX function is `stat`.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    /// The modification time in seconds since 1970, exactly as `FileManager` gives it (`Date`'s value), so stamps
    /// match the records of earlier runs.
    public var modificationTime: Double {
        // Foundation's sum, in its order: seconds since 2001, then the nanoseconds, then back to 1970.
        Date(timeIntervalSinceReferenceDate: Double(modified.tv_sec) - Date.timeIntervalBetween1970AndReferenceDate
             + Double(modified.tv_nsec) / 1_000_000_000).timeIntervalSince1970
    }

    /// The listing's kind of stamp (size and modification time) of this version.
    public var stamp: SourceStamp {
        SourceStamp(size: size, mtime: modificationTime)
    }

    public static func == (a: FileIdentity, b: FileIdentity) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
            && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
    }
}
