import Foundation

/// Writes files so that no reader ever sees a half-written one.
public enum AtomicFile {
    /// Writes `bytes` to a temporary file next to `path`, then renames it over `path`. On failure the temporary
    /// file is removed and nothing appears at `path`.
    /// - Throws: ``MediaError`` `io` (or `permissionDenied`, `fileNotFound` for a missing folder) naming `path`.
    public static func write(_ bytes: [UInt8], to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let temp = temporaryPath(for: path)
        // POSIX calls, so a failure names its cause (errno) rather than Foundation's "error 512".
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure(errno, path: path) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in Glibc.write(fd, raw.baseAddress! + written, raw.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let code = n < 0 ? errno : EIO
                close(fd)
                unlink(temp)
                throw failure(code, path: path)
            }
            written += n
        }
        if close(fd) != 0 {
            let code = errno
            unlink(temp)
            throw failure(code, path: path)
        }
        if rename(temp, url.path) != 0 {
            let code = errno
            unlink(temp)
            throw failure(code, path: path)
        }
    }

    /// A fresh temporary name beside `path` (`.<name>.tmp-<pid>-<n>`): hidden, and known to
    /// ``removeAbandonedTemporaries(in:)`` when its writer is killed. For files and staging folders alike.
    public static func temporaryPath(for path: String) -> String {
        let url = URL(fileURLWithPath: path)
        return url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    }

    private static func failure(_ code: Int32, path: String) -> MediaError {
        let kind: MediaError.Kind = switch code {
        case ENOENT, ENOTDIR: .fileNotFound
        case EACCES, EPERM, EROFS: .permissionDenied
        default: .io
        }
        return MediaError(kind, operation: "write", item: path, message: String(cString: strerror(code)))
    }

    /// Removes the temporary files a killed writer left in `folder` and its subfolders: files named like those
    /// ``write(_:to:)`` makes (`.<name>.tmp-<pid>-<n>`) whose process is gone, or that are over an hour old. A writer
    /// that is still running (another shard writing into the same folder) keeps its files.
    /// - Returns: how many files were removed.
    @discardableResult
    public static func removeAbandonedTemporaries(in folder: URL) -> Int {
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.contentModificationDateKey]) else {
            return 0
        }
        let hourAgo = Date().addingTimeInterval(-3600)
        var removed = 0
        for case let url as URL in walker {
            guard let pid = temporaryOwner(url.lastPathComponent) else { continue }
            let alive = pid == getpid() || kill(pid, 0) == 0 || errno == EPERM
            let modified = (try? url.resourceValues(forKeys: [.contentModificationDateKey]))?.contentModificationDate
            if alive, let modified, modified > hourAgo { continue }
            if (try? FileManager.default.removeItem(at: url)) != nil { removed += 1 }
        }
        return removed
    }

    /// The writer's process id when `name` is one of ``write(_:to:)``'s temporary names, else nil.
    static func temporaryOwner(_ name: String) -> pid_t? {
        guard name.hasPrefix("."), let marker = name.range(of: ".tmp-", options: .backwards) else { return nil }
        let fields = name[marker.upperBound...].split(separator: "-")
        guard fields.count == 2, let pid = pid_t(fields[0]), UInt32(fields[1]) != nil else { return nil }
        return pid
    }
}
