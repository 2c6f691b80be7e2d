import EngineSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A folder for work in progress under the cache's `.work/`, on the cache's file system (so finished files rename
/// in), held by its maker for as long as it works: beside the folder, `<name>.lock` is locked with
/// `flock(LOCK_EX)` through a descriptor this object keeps open.
///
/// When the maker dies (even by SIGKILL) the kernel releases the lock, and the next scan of any ``MediaCache`` on the
/// folder — this process's, a restarted one's, a replica's on the same host or over NFSv4 — gets the lock and removes
/// the folder at once. ``finish()`` (or the object's end) removes the folder and its lock file.
public final class WorkFolder: Sendable {
    /// The folder.
    public let url: URL
    /// Its name in `.work/`.
    let name: String
    /// The `.work/` folder's path.
    let parent: String
    /// The lock file's descriptor while the folder is held, nil once finished (the `Locked` is its confinement).
    private let lock: Locked<Int32?>

    /// Makes `.work/<name>` under `root` with its lock file, locked before its name appears (a scan never finds an
    /// unlocked lock file of a live maker).
    /// - Throws: ``CacheDirectory/Failure``.
    init(root: String, name: String) throws(CacheDirectory.Failure) {
        let rootFD = try CacheDirectory.openRoot(root)
        defer { close(rootFD) }
        let work = try CacheDirectory.openFolder([MediaCache.workName], in: rootFD, create: true)
        defer { close(work) }
        let staging = ".\(name).lock.tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let fd = openat(work, staging, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .system(errno) }
        guard flock(fd, LOCK_EX) == 0, renameat(work, staging, work, name + MediaCache.lockSuffix) == 0 else {
            let code = errno
            unlinkat(work, staging, 0)
            close(fd)
            throw .system(code)
        }
        guard mkdirat(work, name, 0o755) == 0 else {
            let code = errno
            unlinkat(work, name + MediaCache.lockSuffix, 0)
            close(fd)
            throw .system(code)
        }
        self.name = name
        parent = root + "/" + MediaCache.workName
        url = URL(fileURLWithPath: parent + "/" + name, isDirectory: true)
        lock = Locked(fd)
    }

    /// Removes the folder and everything left in it, then its lock file, and lets the lock go. Idempotent.
    public func finish() {
        guard let fd = lock.withLock({ held -> Int32? in defer { held = nil }; return held }) else { return }
        let work = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if work >= 0 {
            CacheDirectory.removeTree(name, in: work)
            unlinkat(work, name + MediaCache.lockSuffix, 0)
            close(work)
        }
        close(fd)
    }

    deinit { finish() }
}
