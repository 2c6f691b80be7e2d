import EngineSupport
import Foundation
import Media
#if canImport(Glibc)
import Glibc
#endif

/// The server's disk cache: files at relative paths under one folder, each written whole or not at all, with a size
/// limit kept by evicting the least recently used files.
///
/// - **Atomic.** A file is written by `AtomicFile` (a temporary name in its own folder, then a rename): a reader —
///   this process or another ``MediaCache`` on the same folder, such as a second `serve` replica on a shared volume
///   — sees the whole file or none. Temporary files older than ten minutes are crash leftovers and are removed by the
///   next scan (by age alone: on a shared volume the writer may be a process of another machine, whose pid means
///   nothing here).
/// - **LRU.** A read touches the file's modification time; eviction removes the oldest files until the total is
///   under 90 % of the limit. Each process keeps its own running total and rescans the folder when over the limit,
///   so replicas sharing a folder converge on the real size.
/// - **Safe paths.** Keys are relative paths that the server builds itself (``ItemCatalog`` folders and fixed file
///   names), never request text; a key with an empty, `.` or `..` component is refused.
///
/// Thread-safe: the running total is under a lock; files are only created by rename and removed whole.
public final class MediaCache: Sendable {
    /// The cache folder.
    public let root: URL
    /// The size limit in bytes.
    public let limit: Int64

    private let state = Locked(State())
    private struct State {
        var bytes: Int64 = 0
        var counter = 0
        var evicting = false
    }

    /// A cache in `root` (created when missing) holding at most `limit` bytes; scans what is there already.
    /// - Throws: ``MediaError``-free Foundation errors when the folder cannot be created.
    public init(root: URL, limit: Int64) throws {
        self.root = root.standardizedFileURL
        self.limit = max(1, limit)
        try FileManager.default.createDirectory(at: self.root, withIntermediateDirectories: true)
        let total = scan(removingStale: true).reduce(Int64(0)) { $0 + $1.size }
        state.withLock { $0.bytes = total }
    }

    /// The bytes the cache holds, as this process counts them.
    public var bytes: Int64 { state.withLock { $0.bytes } }

    /// The absolute path of `key`, or nil for a key that is not a plain relative path.
    public func path(_ key: String) -> String? {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.hasPrefix(".") }) else {
            return nil
        }
        return root.path + "/" + key
    }

    /// Whether `key` is in the cache: a regular file reached without a symbolic link in any component.
    public func contains(_ key: String) -> Bool {
        guard let parts = CacheDirectory.components(key) else { return false }
        let info = try? CacheDirectory.withParent(of: parts, root: root.path, create: false) { fd, name in
            CacheDirectory.status(name, in: fd)
        }
        guard let found = info ?? nil else { return false }
        return (found.st_mode & S_IFMT) == S_IFREG
    }

    /// An open descriptor (`O_RDONLY`, close-on-exec) of `key`'s file, or nil when it is not cached; the caller
    /// closes it. Only a regular file reached without a symbolic link in any component is opened (a link planted in
    /// the cache is "not cached"). A hit counts as a use for LRU (the file's times are touched with `futimens`).
    /// The file's content never changes while it is open: a cached file is only ever replaced whole, by rename.
    public func openForReading(_ key: String) -> Int32? {
        guard let parts = CacheDirectory.components(key) else { return nil }
        let opened = try? CacheDirectory.withParent(of: parts, root: root.path, create: false) { fd, name in
            CacheDirectory.openRegularFile(name, in: fd)
        }
        guard let fd = opened ?? nil else { return nil }
        // Touch for LRU (the file's content never changes, only its place in the order).
        futimens(fd, nil)
        return fd
    }

    /// The bytes of `key`, or nil when it is not cached (as ``openForReading(_:)`` finds it); a hit counts as a use
    /// for LRU.
    public func read(_ key: String) -> [UInt8]? {
        guard let fd = openForReading(key) else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + done, size - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    /// Writes `bytes` as `key`, whole or not at all, then evicts old files if the cache is over its limit.
    /// - Throws: ``CacheError`` when the key is not a plain relative path or the file cannot be written.
    public func write(_ key: String, _ bytes: [UInt8]) throws {
        guard let path = path(key) else { throw CacheError(key: key, reason: "not a relative path") }
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw CacheError(key: key, reason: "cannot create its folder: \(error.localizedDescription)")
        }
        do {
            try AtomicFile.write(bytes, to: path)
        } catch {
            throw CacheError(key: key, reason: String(describing: error))
        }
        let over = state.withLock { s -> Bool in
            s.bytes += Int64(bytes.count)
            guard s.bytes > limit, !s.evicting else { return false }
            s.evicting = true
            return true
        }
        if over { evict() }
    }

    /// Moves the finished file at `path` (on the cache's file system) into the cache as `key`, unless `key` is
    /// there already, in which case the file is removed: the two have the same bytes.
    /// - Throws: ``CacheError`` when the key is not a plain relative path or the rename fails.
    public func adopt(_ path: String, as key: String) throws {
        guard let target = self.path(key) else { throw CacheError(key: key, reason: "not a relative path") }
        var info = stat()
        guard stat(path, &info) == 0 else { throw CacheError(key: key, reason: "nothing made") }
        try? FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent,
                                                 withIntermediateDirectories: true)
        if access(target, F_OK) == 0 {
            unlink(path)
            return
        }
        guard rename(path, target) == 0 else { throw CacheError(key: key, reason: String(cString: strerror(errno))) }
        state.withLock { $0.bytes += Int64(info.st_size) }
    }

    /// A fresh folder for work in progress under the cache (same file system, so finished files rename in).
    public func workFolder() throws -> URL {
        let n = state.withLock { s -> Int in s.counter += 1; return s.counter }
        let url = root.appendingPathComponent(".work/\(getpid())-\(n)-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Removes the least recently used files until the cache is under 90 % of its limit.
    func evict() {
        defer { state.withLock { $0.evicting = false } }
        var files = scan(removingStale: true)
        var total = files.reduce(Int64(0)) { $0 + $1.size }
        let target = limit / 10 * 9
        if total > target {
            files.sort { $0.used < $1.used }
            for file in files where total > target {
                if unlink(file.path) == 0 { total -= file.size }
            }
        }
        state.withLock { $0.bytes = total }
    }

    private struct Entry {
        var path: String
        var size: Int64
        var used: Double
    }

    /// Every cached file (temporary and work files excluded); stale temporary files and work folders are removed.
    private func scan(removingStale: Bool) -> [Entry] {
        var entries: [Entry] = []
        let now = Date().timeIntervalSince1970
        if removingStale {
            let work = root.path + "/.work"
            for name in (try? FileManager.default.contentsOfDirectory(atPath: work)) ?? [] {
                var info = stat()
                if lstat(work + "/" + name, &info) == 0, now - Double(info.st_mtim.tv_sec) > 600 {
                    try? FileManager.default.removeItem(atPath: work + "/" + name)
                }
            }
        }
        guard let enumerator = FileManager.default.enumerator(atPath: root.path) else { return [] }
        while let relative = enumerator.nextObject() as? String {
            let path = root.path + "/" + relative
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            let name = (relative as NSString).lastPathComponent
            let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            if name.hasPrefix(".") {
                if removingStale, now - modified > 600, name.contains(".tmp-") { unlink(path) }
                if (info.st_mode & S_IFMT) == S_IFDIR { enumerator.skipDescendants() }
                continue
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else { continue }
            entries.append(Entry(path: path, size: Int64(info.st_size), used: modified))
        }
        return entries
    }
}

/// A cache file that cannot be written.
public struct CacheError: Error, CustomStringConvertible {
    /// The cache key.
    public var key: String
    /// Why.
    public var reason: String
    public var description: String { "cache: \(key): \(reason)" }
}
