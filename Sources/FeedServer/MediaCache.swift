import EngineSupport
import Feed
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The server's disk cache: files at relative paths under one folder, each written whole or not at all, with a size
/// limit kept by evicting the least recently used files.
///
/// - **Atomic.** A file is written under a temporary name in its own folder (`.<name>.tmp-<pid>-<n>`), then renamed:
///   a reader — this process or another ``MediaCache`` on the same folder, such as a second `serve` replica on a
///   shared volume — sees the whole file or none. Temporary files older than ten minutes are crash leftovers and are
///   removed by the next scan (by age alone: on a shared volume the writer may be a process of another machine, whose
///   pid means nothing here). A young temporary file is not counted (its writer counts the file when it renames it).
/// - **Work in progress.** A full run writes into a ``WorkFolder`` under `.work/`, whose bytes count towards the
///   total like cached files. Its maker holds a lock on it; a scan removes at once a work folder whose lock it can
///   take (its maker died), and one without a lock file once it is ten minutes old.
/// - **LRU.** A read touches the file's modification time; eviction removes the oldest files until the total — work
///   in progress included — is under 90 % of the limit. Each process keeps its own running total and rescans the
///   folder when over the limit, so replicas sharing a folder converge on the real size.
/// - **A full disk heals.** A write or adoption that fails with `ENOSPC` or `EDQUOT` evicts the least recently used
///   files, down to 90 % of what the cache holds less the size being written, and is tried once more.
/// - **Safe paths.** Keys are relative paths that the server builds itself (``ItemCatalog`` folders and fixed file
///   names), never request text; a key with an empty, `.`, `..` or hidden component is refused. No symbolic link is
///   followed below the root: each folder of a key is opened from the one above with `O_NOFOLLOW`, so a link planted
///   in the cache is "not cached" for a read and an error for a write, and scans and eviction never cross one.
///
/// Thread-safe: the running total is under a lock; files are only created by rename and removed whole.
public final class MediaCache: Sendable {
    /// The cache folder.
    public let root: URL
    /// The size limit in bytes.
    public let limit: Int64

    /// The folder under the root that holds work folders.
    static let workName = ".work"
    /// A work folder's lock file is its name with this suffix, beside it.
    static let lockSuffix = ".lock"
    /// Seconds after which a temporary file, or a work folder without a lock file, is a crash leftover.
    static let staleAge: Double = 600

    private let state = Locked(State())
    private struct State {
        var bytes: Int64 = 0
        var counter = 0
        var evicting = false
    }

    /// For tests: the `errno` values that the next file writes fail with, in order, as if the disk had said so.
    let injectedWriteErrors = Locked<[Int32]>([])

    /// A cache in `root` (created when missing) holding at most `limit` bytes; scans what is there already (removing
    /// crash leftovers).
    /// - Throws: Foundation errors when the folder cannot be created.
    public init(root: URL, limit: Int64) throws {
        self.root = root.standardizedFileURL
        self.limit = max(1, limit)
        try FileManager.default.createDirectory(at: self.root, withIntermediateDirectories: true)
        // Marked as the engine's outputs: a cache inside a served (watched) folder is never listed as items, which
        // would be cached, listed again, and so on.
        let marker = open(self.root.path + "/" + DirectoryFeedLoader.outputMarker,
                          O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        if marker >= 0 { close(marker) }
        let total = scan().total
        state.withLock { $0.bytes = total }
    }

    /// The bytes the cache holds — cached files and work in progress — as this process counts them.
    public var bytes: Int64 { state.withLock { $0.bytes } }

    /// The absolute path of `key`, or nil for a key that is not a plain relative path. For messages: the cache itself
    /// never opens a path whole (see "Safe paths").
    public func path(_ key: String) -> String? {
        CacheDirectory.components(key) == nil ? nil : root.path + "/" + key
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

    /// Writes `bytes` as `key`, whole or not at all, then evicts old files if the cache is over its limit. A full
    /// disk evicts and tries again once.
    /// - Throws: ``CacheError`` when the key is not a plain relative path, a component of it is a symbolic link, or
    ///   the file cannot be written.
    public func write(_ key: String, _ bytes: [UInt8]) throws {
        guard let parts = CacheDirectory.components(key) else {
            throw CacheError(key: key, reason: "not a relative path")
        }
        try retryingWhenFull(key: key, size: Int64(bytes.count)) { () throws(CacheDirectory.Failure) in
            try CacheDirectory.withParent(of: parts, root: root.path, create: true) {
                fd, name throws(CacheDirectory.Failure) in
                try writeFile(bytes, named: name, in: fd)
            }
        }
        added(Int64(bytes.count))
    }

    /// Writes `bytes` to a temporary file in the folder `fd`, then renames it to `name` (not over a link).
    private func writeFile(_ bytes: [UInt8], named name: String, in fd: Int32) throws(CacheDirectory.Failure) {
        if CacheDirectory.isLink(name, in: fd) { throw .link }
        let temp = ".\(name).tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let file = openat(fd, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard file >= 0 else { throw .system(errno) }
        var written = 0
        while written < bytes.count {
            var n = bytes.withUnsafeBytes { Glibc.write(file, $0.baseAddress! + written, $0.count - written) }
            if let injected = injectedWriteErrors.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                n = -1
                errno = injected
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let code = n < 0 ? errno : EIO
                close(file)
                unlinkat(fd, temp, 0)
                throw .system(code)
            }
            written += n
        }
        guard close(file) == 0, renameat(fd, temp, fd, name) == 0 else {
            let code = errno
            unlinkat(fd, temp, 0)
            throw .system(code)
        }
    }

    /// Runs `body`; when it fails because the disk is full, evicts to make room for `size` bytes and runs it once more.
    private func retryingWhenFull<T>(key: String, size: Int64,
                                     _ body: () throws(CacheDirectory.Failure) -> T) throws(CacheError) -> T {
        do {
            return try body()
        } catch .system(let code) where code == ENOSPC || code == EDQUOT {
            let total = scan().total
            evict(downTo: max(0, total / 10 * 9 - size))
            do {
                return try body()
            } catch {
                throw CacheError(key: key, reason: error.reason)
            }
        } catch {
            throw CacheError(key: key, reason: error.reason)
        }
    }

    /// A fresh folder for work in progress under the cache (same file system, so finished files rename in), held by
    /// this process until it is finished; ``adopt(_:into:)`` moves what it made into the cache.
    /// - Throws: ``CacheError`` when it cannot be made.
    public func workFolder() throws -> WorkFolder {
        let n = state.withLock { s -> Int in s.counter += 1; return s.counter }
        let name = "\(getpid())-\(n)-\(UInt32.random(in: 0 ... .max))"
        do {
            return try WorkFolder(root: root.path, name: name)
        } catch {
            throw CacheError(key: Self.workName, reason: error.reason)
        }
    }

    /// Moves every file made in `work` into the cache under `folder` (at the same relative path), except those there
    /// already, which are left (the two have the same bytes). The work's bytes are counted first, so eviction keeps
    /// the cache under its limit with them; a full disk evicts and tries again once.
    /// - Throws: ``CacheError`` when `folder` is not a plain relative path, a component of a target is a symbolic
    ///   link, or a rename fails.
    public func adopt(_ work: WorkFolder, into folder: String) throws {
        guard let base = CacheDirectory.components(folder) else {
            throw CacheError(key: folder, reason: "not a relative path")
        }
        let source = open(work.url.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard source >= 0 else { throw CacheError(key: folder, reason: "nothing made") }
        defer { close(source) }
        let size = CacheDirectory.names(in: source).reduce(Int64(0)) { $0 + CacheDirectory.treeSize($1, in: source) }
        added(size)
        var moved: Int64 = 0
        defer { added(moved - size) }
        try adoptFiles(in: source, at: [], into: base, moved: &moved)
    }

    /// Moves the regular files under the open work folder `fd` (at `relative` in the work) to `base` + their path.
    private func adoptFiles(in fd: Int32, at relative: [String], into base: [String], moved: inout Int64) throws {
        for name in CacheDirectory.names(in: fd) where !name.hasPrefix(".") {
            guard let info = CacheDirectory.status(name, in: fd) else { continue }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                let sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard sub >= 0 else { continue }
                defer { close(sub) }
                try adoptFiles(in: sub, at: relative + [name], into: base, moved: &moved)
                continue
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else { continue }
            let parts = base + relative + [name]
            let key = parts.joined(separator: "/")
            let renamed = try retryingWhenFull(key: key, size: 0) { () throws(CacheDirectory.Failure) -> Bool in
                try CacheDirectory.withParent(of: parts, root: root.path, create: true) {
                    target, last throws(CacheDirectory.Failure) -> Bool in
                    if let there = CacheDirectory.status(last, in: target) {
                        if (there.st_mode & S_IFMT) == S_IFLNK { throw .link }
                        return false
                    }
                    if let injected = injectedWriteErrors.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                        throw .system(injected)
                    }
                    guard renameat(fd, name, target, last) == 0 else { throw .system(errno) }
                    return true
                }
            }
            if renamed { moved += Int64(info.st_size) }
        }
    }

    /// Counts `count` more bytes (fewer when negative) and evicts when the total is over the limit.
    private func added(_ count: Int64) {
        let over = state.withLock { s -> Bool in
            s.bytes += count
            guard s.bytes > limit, !s.evicting else { return false }
            s.evicting = true
            return true
        }
        if over {
            defer { state.withLock { $0.evicting = false } }
            evict(downTo: limit / 10 * 9)
        }
    }

    /// Removes the item folder `folder` (a key such as `clips/a.1f2e3d4c`) and everything in it, never following a
    /// link; returns the bytes freed. For an item version nobody can reach any more: its source was removed or
    /// replaced.
    @discardableResult
    public func removeFolder(_ folder: String) -> Int64 {
        guard let parts = CacheDirectory.components(folder) else { return 0 }
        let freed = (try? CacheDirectory.withParent(of: parts, root: root.path, create: false) { fd, name -> Int64 in
            let size = CacheDirectory.treeSize(name, in: fd)
            CacheDirectory.removeTree(name, in: fd)
            return size
        }) ?? 0
        if freed > 0 { state.withLock { $0.bytes = max(0, $0.bytes - freed) } }
        return freed
    }

    /// Removes the cached file `key` (a regular file, reached without following a link); whether it was there. For a
    /// measurement that needs the file made again (`videofeed simulate calibrate --serve`).
    @discardableResult
    public func discard(_ key: String) -> Bool {
        guard let parts = CacheDirectory.components(key) else { return false }
        let freed = (try? CacheDirectory.withParent(of: parts, root: root.path, create: false) { fd, name -> Int64? in
            guard let info = CacheDirectory.status(name, in: fd), (info.st_mode & S_IFMT) == S_IFREG,
                  unlinkat(fd, name, 0) == 0 else { return nil }
            return Int64(info.st_size)
        }) ?? nil
        guard let freed else { return false }
        state.withLock { $0.bytes = max(0, $0.bytes - freed) }
        return true
    }

    /// Removes the least recently used files until the cache is under 90 % of its limit.
    func evict() { evict(downTo: limit / 10 * 9) }

    /// Removes the least recently used files until the cache — work in progress included — holds at most `target`
    /// bytes (or nothing evictable is left), and takes the result as the running total.
    private func evict(downTo target: Int64) {
        let found = scan()
        var total = found.total
        if total > target {
            for file in found.files.sorted(by: { $0.used < $1.used }) where total > target {
                if remove(file.key) { total -= file.size }
            }
        }
        state.withLock { $0.bytes = total }
    }

    /// Unlinks the file `key` (reached without following a link); whether it was there.
    private func remove(_ key: String) -> Bool {
        guard let parts = CacheDirectory.components(key) else { return false }
        return (try? CacheDirectory.withParent(of: parts, root: root.path, create: false) { fd, name in
            unlinkat(fd, name, 0) == 0
        }) ?? false
    }

    /// A cached file as a scan finds it.
    private struct Entry {
        var key: String
        var size: Int64
        var used: Double
    }

    /// Every cached file, and the total of the cache: cached files and work in progress, each counted once. Crash
    /// leftovers are removed: temporary files and lock-less work folders older than ten minutes, and work folders
    /// whose lock can be taken (their maker is gone). No link is followed.
    private func scan() -> (files: [Entry], total: Int64) {
        guard let rootFD = try? CacheDirectory.openRoot(root.path) else { return ([], 0) }
        defer { close(rootFD) }
        var files: [Entry] = []
        var total: Int64 = 0
        let now = Date().timeIntervalSince1970
        walk(rootFD, prefix: "", now: now, files: &files, total: &total)
        let work = openat(rootFD, Self.workName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if work >= 0 {
            total += scanWork(work, now: now)
            close(work)
        }
        return (files, total)
    }

    /// Adds the regular files under the open folder `fd` (at `prefix`) to `files` and `total`; hidden names are not
    /// cached files (temporary files are removed when stale; `.work` is scanned apart).
    private func walk(_ fd: Int32, prefix: String, now: Double, files: inout [Entry], total: inout Int64) {
        for name in CacheDirectory.names(in: fd) {
            guard let info = CacheDirectory.status(name, in: fd) else { continue }
            let kind = info.st_mode & S_IFMT
            if name.hasPrefix(".") {
                if kind == S_IFREG, name.contains(".tmp-"), now - Self.modified(info) > Self.staleAge {
                    unlinkat(fd, name, 0)
                }
                continue
            }
            if kind == S_IFDIR {
                let sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard sub >= 0 else { continue }
                walk(sub, prefix: prefix + name + "/", now: now, files: &files, total: &total)
                close(sub)
            } else if kind == S_IFREG {
                files.append(Entry(key: prefix + name, size: Int64(info.st_size), used: Self.modified(info)))
                total += Int64(info.st_size)
            }
        }
    }

    /// The bytes of the live work folders in the open `.work` folder `fd`, after removing the dead ones: a folder
    /// whose lock file this process can lock (`flock(LOCK_EX | LOCK_NB)`: its maker is gone), or that has no lock
    /// file and is ten minutes old; and lock files and temporary files left without their folder.
    private func scanWork(_ fd: Int32, now: Double) -> Int64 {
        var total: Int64 = 0
        let names = CacheDirectory.names(in: fd)
        let present = Set(names)
        for name in names {
            guard let info = CacheDirectory.status(name, in: fd) else { continue }
            let kind = info.st_mode & S_IFMT
            if kind == S_IFDIR, !name.hasPrefix(".") {
                let lockName = name + Self.lockSuffix
                if present.contains(lockName) || CacheDirectory.status(lockName, in: fd) != nil {
                    if Self.removeIfUnlocked(name, lock: lockName, in: fd) { continue }
                } else if now - Self.modified(info) > Self.staleAge {
                    CacheDirectory.removeTree(name, in: fd)
                    continue
                }
                total += CacheDirectory.treeSize(name, in: fd)
            } else if kind == S_IFREG, name.hasSuffix(Self.lockSuffix), !name.hasPrefix(".") {
                // A lock file whose folder is gone (or not made yet: then it is locked and stays).
                let folder = String(name.dropLast(Self.lockSuffix.count))
                if CacheDirectory.status(folder, in: fd) == nil {
                    _ = Self.removeIfUnlocked(folder, lock: name, in: fd)
                }
            } else if now - Self.modified(info) > Self.staleAge {
                CacheDirectory.removeTree(name, in: fd)
            } else {
                total += CacheDirectory.treeSize(name, in: fd)
            }
        }
        return total
    }

    /// Removes the work folder `name` and its lock file `lock` in the folder `fd` if the lock can be taken now (its
    /// maker is gone); whether it did.
    private static func removeIfUnlocked(_ name: String, lock: String, in fd: Int32) -> Bool {
        // Read-write, as NFS needs for an exclusive lock; read-only when another user's maker made it (enough on a
        // local file system).
        var lockFD = openat(fd, lock, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if lockFD < 0, errno == EACCES { lockFD = openat(fd, lock, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        guard lockFD >= 0 else { return false }
        defer { close(lockFD) }
        guard flock(lockFD, LOCK_EX | LOCK_NB) == 0 else { return false }
        CacheDirectory.removeTree(name, in: fd)
        unlinkat(fd, lock, 0)
        return true
    }

    /// A file's modification time in seconds since 1970.
    private static func modified(_ info: stat) -> Double {
        Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
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
