import Foundation
import Media

/// An exclusive lock on one card file of an output folder, held by one batch run at a time: `.<card file>.lock`
/// beside it, locked with `flock(2)` and holding the holder's process id for the message another run prints.
///
/// The kernel releases the lock when the holder's process ends, however it ends, so a lock left by a killed run
/// is taken over by the next run without any clean-up.
final class OutputLock: Sendable {
    private let descriptor: Int32

    /// Takes the lock for `cardFile`, or fails at once when another run holds it.
    /// - Throws: ``MediaError`` `io` naming the card file and the holder's process id, or why the lock file could
    ///   not be made.
    init(for cardFile: URL) throws {
        let path = cardFile.deletingLastPathComponent().appendingPathComponent(".\(cardFile.lastPathComponent).lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            throw MediaError(.io, operation: "lock", item: cardFile.path, message: String(cString: strerror(errno)))
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &buffer, buffer.count, 0)
            let holder = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines) : "unknown"
            close(fd)
            throw MediaError(.io, operation: "lock", item: cardFile.path, message: """
                another run (process \(holder)) is writing this card file and its thumbnails; wait for it to end or \
                use another output folder
                """)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        descriptor = fd
    }

    /// Releases the lock (the file stays, for the next run to lock).
    func release() {
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
