import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// File-system calls on the cache folder that never follow a symbolic link below its root: every folder of a path
/// is opened with `openat(…, O_NOFOLLOW | O_DIRECTORY)` from the one above it, so a link planted anywhere in the cache
/// (`<cache>/<folder>`, `<cache>/<folder>/poster.jpg`) cannot lead a read, a write or a removal outside it.
enum CacheDirectory {
    /// Why a path could not be reached or written.
    enum Failure: Error, Equatable {
        /// A component of the path is a symbolic link.
        case link
        /// A system call failed with this `errno` (`ENOENT` for a missing component).
        case system(Int32)

        /// A short reason, without paths (clients may see it).
        var reason: String {
            switch self {
            case .link: "a symbolic link in the cache path"
            case .system(let code) where code == ENOSPC || code == EDQUOT: "no space left in the cache"
            case .system(let code): String(cString: strerror(code))
            }
        }
    }

    /// The components of `key`, or nil when it is not a plain relative path (an empty, `.`, `..` or hidden
    /// component).
    static func components(_ key: String) -> [String]? {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.hasPrefix(".") }) else {
            return nil
        }
        return parts.map(String.init)
    }

    /// An open descriptor of the folder `root` (the operator's path: a link there is followed).
    static func openRoot(_ root: String) throws(Failure) -> Int32 {
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .system(errno) }
        return fd
    }

    /// An open descriptor of the folder `folders` names under the folder `base`, reached one component at a time
    /// without following links; missing folders are made when `create` is set. The caller closes it; `base` stays
    /// open.
    static func openFolder(_ folders: ArraySlice<String>, in base: Int32, create: Bool) throws(Failure) -> Int32 {
        var fd = dup(base)
        guard fd >= 0 else { throw .system(errno) }
        for name in folders {
            var next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0, errno == ENOENT, create {
                if mkdirat(fd, name, 0o755) != 0, errno != EEXIST {
                    let code = errno
                    close(fd)
                    throw .system(code)
                }
                next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            guard next >= 0 else {
                let code = errno
                let failure = isLink(name, in: fd) ? Failure.link : .system(code)
                close(fd)
                throw failure
            }
            close(fd)
            fd = next
        }
        return fd
    }

    /// Runs `body` with the open folder that holds `parts`' last component (reached as ``openFolder(_:in:create:)``
    /// does from `root`) and that component's name.
    static func withParent<T>(of parts: [String], root: String, create: Bool,
                              _ body: (Int32, String) throws(Failure) -> T) throws(Failure) -> T {
        let rootFD = try openRoot(root)
        defer { close(rootFD) }
        let parent = try openFolder(parts.dropLast(), in: rootFD, create: create)
        defer { close(parent) }
        return try body(parent, parts[parts.count - 1])
    }

    /// Whether `name` in the folder `fd` is a symbolic link.
    static func isLink(_ name: String, in fd: Int32) -> Bool {
        var info = stat()
        return fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }

    /// The status of `name` in the folder `fd`, not following a link; nil when it does not exist.
    static func status(_ name: String, in fd: Int32) -> stat? {
        var info = stat()
        return fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// An open descriptor (`O_RDONLY`) of the regular file `name` in the folder `fd`; nil for a link, a missing
    /// file or anything but a regular file (a FIFO planted there does not block: it is opened without waiting).
    static func openRegularFile(_ name: String, in fd: Int32) -> Int32? {
        let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else { return nil }
        var info = stat()
        guard fstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(file)
            return nil
        }
        // Back to blocking reads for whoever streams it (a regular file ignores the flag, but say what is meant).
        _ = fcntl(file, F_SETFL, fcntl(file, F_GETFL) & ~O_NONBLOCK)
        return file
    }

    /// The names in the open folder `fd` (without `.` and `..`).
    static func names(in fd: Int32) -> [String] {
        let copy = dup(fd)
        guard copy >= 0 else { return [] }
        guard let dir = fdopendir(copy) else {
            close(copy)
            return []
        }
        defer { closedir(dir) }
        // The copy shares the folder's read position with `fd`: start from the beginning whatever read it before.
        rewinddir(dir)
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                    String(cString: $0)
                }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes `name` in the folder `fd` and, if it is a folder, everything in it, never following a link (a link
    /// is removed itself).
    static func removeTree(_ name: String, in fd: Int32) {
        guard let info = status(name, in: fd) else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            let sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if sub >= 0 {
                for child in names(in: sub) { removeTree(child, in: sub) }
                close(sub)
            }
            unlinkat(fd, name, AT_REMOVEDIR)
        } else {
            unlinkat(fd, name, 0)
        }
    }

    /// The bytes of the regular files under `name` in the folder `fd` (the file's size if it is one), never
    /// following a link.
    static func treeSize(_ name: String, in fd: Int32) -> Int64 {
        guard let info = status(name, in: fd) else { return 0 }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return Int64(info.st_size)
        case S_IFDIR:
            let sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard sub >= 0 else { return 0 }
            defer { close(sub) }
            return names(in: sub).reduce(Int64(0)) { $0 + treeSize($1, in: sub) }
        default: return 0
        }
    }
}
