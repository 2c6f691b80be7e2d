import EngineSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Watches a folder and its sub-folders with inotify, on a thread of its own: each event that may change the
/// listing calls ``onChange``, and what writers do to files goes to a ``FileSettling`` (created or modified: being
/// written; closed after writing, or renamed in: complete).
///
/// Hidden files and folders are ignored, as the listing ignores them. A folder created (or moved in) later is watched
/// from then on. When inotify cannot be used (no inotify instance, or the per-user watch limit reached), ``isWatching``
/// is false and the caller's periodic rescan is the only way changes are seen.
final class FolderWatcher: Sendable {
    /// The watched root, as the folder's walk names it (a standardised path).
    let root: String
    private let settling: FileSettling?
    private let onChange: @Sendable () -> Void
    /// The inotify descriptor and the pipe that wakes the thread to stop; owned by the thread, which closes them.
    private let descriptors: (inotify: Int32, wakeRead: Int32, wakeWrite: Int32)?
    /// Watch descriptors → folder paths; read and written on the watch thread only, behind this lock for `stop()`.
    private let folders = Locked<[Int32: String]>([:])
    private let degraded = Locked(false)
    private let stopped = Locked(false)

    /// The events that can change a listing or a file's completeness.
    private static let mask: UInt32 = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY
                                             | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

    /// Starts watching `root`; `onChange` is called on the watch thread. With `inotify` false nothing is watched
    /// (as on a file system inotify cannot see into): for tests of the rescan path.
    init(root: String, settling: FileSettling?, inotify: Bool = true, onChange: @escaping @Sendable () -> Void) {
        self.root = root
        self.settling = settling
        self.onChange = onChange
        let fd = inotify ? inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) : -1
        var pipeFDs: [Int32] = [-1, -1]
        guard fd >= 0, pipe(&pipeFDs) == 0 else {
            if fd >= 0 { close(fd) }
            descriptors = nil
            degraded.set(true)
            return
        }
        for end in pipeFDs { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        descriptors = (fd, pipeFDs[0], pipeFDs[1])
        addTree(root)
        let thread = Thread { [self] in self.loop() }
        thread.name = "videofeed.folder-watch"
        thread.start()
    }

    /// Whether every folder is watched (else only rescans see changes).
    var isWatching: Bool { !degraded.get() }

    /// Stops the thread (which closes the descriptors); safe to call more than once, from any thread. The wake byte
    /// is written under the lock the thread closes the descriptors under, so it never reaches a reused number.
    func stop() {
        guard let descriptors else { return }
        stopped.withLock { s in
            guard !s else { return }
            s = true
            var byte: UInt8 = 1
            _ = write(descriptors.wakeWrite, &byte, 1)
        }
    }

    deinit { stop() }

    /// Adds a watch on `folder` and every visible sub-folder (symbolic links to folders are not followed).
    private func addTree(_ folder: String) {
        guard let descriptors else { return }
        let wd = inotify_add_watch(descriptors.inotify, folder, Self.mask | UInt32(IN_ONLYDIR | IN_DONT_FOLLOW))
        guard wd >= 0 else {
            // ENOSPC: the watch limit (fs.inotify.max_user_watches); rescans stand in.
            if errno == ENOSPC || errno == ENOMEM { degraded.set(true) }
            return
        }
        folders.withLock { $0[wd] = folder }
        guard let children = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in children where !name.hasPrefix(".") {
            let path = folder + "/" + name
            var info = stat()
            // The engine's own output folders are not listed, so not watched (their writes would wake rescans).
            if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR,
               lstat(path + "/" + DirectoryScanner.outputMarker, &info) != 0 {
                addTree(path)
            }
        }
    }

    private func loop() {
        guard let descriptors else { return }
        defer {
            // Closed with the flag set under its lock: a later stop() writes nothing.
            stopped.withLock { s in
                s = true
                close(descriptors.inotify)
                close(descriptors.wakeRead)
                close(descriptors.wakeWrite)
            }
        }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !stopped.get() {
            var fds = [pollfd(fd: descriptors.inotify, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: descriptors.wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                degraded.set(true)
                return
            }
            if fds[1].revents != 0 || stopped.get() { return }
            let count = buffer.withUnsafeMutableBytes { read(descriptors.inotify, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                degraded.set(true)
                return
            }
            if handle(buffer, count: count) { onChange() }
        }
    }

    /// Applies the events in `buffer[0..<count]`; whether any of them may change the listing.
    private func handle(_ buffer: [UInt8], count: Int) -> Bool {
        var offset = 0
        var changed = false
        func field(_ at: Int) -> UInt32 {
            UInt32(buffer[at]) | UInt32(buffer[at + 1]) << 8 | UInt32(buffer[at + 2]) << 16 | UInt32(buffer[at + 3]) << 24
        }
        while offset + 16 <= count {
            let wd = Int32(bitPattern: field(offset))
            let mask = field(offset + 4)
            let length = Int(field(offset + 12))
            let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
            offset += 16 + length
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                // Events were lost: only a rescan knows what changed.
                changed = true
                continue
            }
            if mask & UInt32(IN_IGNORED) != 0 {
                folders.withLock { $0[wd] = nil }
                continue
            }
            guard let folder = folders.withLock({ $0[wd] }) else { continue }
            let name = String(decoding: nameBytes, as: UTF8.self)
            if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                changed = true
                continue
            }
            if name == DirectoryScanner.outputMarker, folder != root, mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                // A folder became an output folder (a batch or the server's cache started in it): unwatched.
                inotify_rm_watch(descriptors?.inotify ?? -1, wd)
                changed = true
                continue
            }
            guard !name.isEmpty, !name.hasPrefix(".") else { continue }
            let path = folder + "/" + name
            let isFolder = mask & UInt32(IN_ISDIR) != 0
            if isFolder {
                if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 { addTree(path) }
                changed = true
                continue
            }
            if mask & UInt32(IN_CREATE) != 0 {
                // An empty regular file was created by a writer's open (which a close ends); a link made whole
                // (`ln`, `ln -s`) has no close to wait for.
                var info = stat()
                let opened = lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_size == 0
                if opened { settling?.sawWriting(path) } else { settling?.sawClosed(path) }
            }
            if mask & UInt32(IN_MODIFY) != 0 { settling?.sawWriting(path) }
            if mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0 { settling?.sawClosed(path) }
            if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 { settling?.sawGone(path) }
            // Writing alone changes no listing (the file is held back until it is closed): no rescan per write.
            if mask & ~UInt32(IN_MODIFY) != 0 { changed = true }
        }
        return changed
    }
}
