import Foundation

/// A `flock(2)` lock on a file in an output folder, shared or exclusive, holding the holder's process id for the
/// message another run prints. The kernel releases it when the holder's process ends, however it ends, so a lock
/// left by a killed run is taken over by the next run without any clean-up.
///
/// A batch run holds two (``forRun(in:shardFile:)``): `OUT/.videofeed.lock` — exclusive for an unsharded run, shared
/// for a shard, so shards run side by side while no unsharded run or merge does — and the exclusive lock of its
/// own card file, `OUT/.cards-<i>-of-<n>.jsonl.lock`, so the same shard never runs twice at once.
/// ``CardFile/merge(in:)`` holds the folder's lock exclusively.
public final class OutputLock: Sendable {
    private let descriptor: Int32

    /// Takes the lock on `path`, or fails at once when another run holds it in a way that conflicts.
    /// - Throws: ``MediaError`` `io` naming `item` and the holder's process id when it is known.
    public init(path: String, exclusive: Bool, item: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            throw MediaError(.io, operation: "lock", item: item, message: "\(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &buffer, buffer.count, 0)
            let holder = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines) : ""
            close(fd)
            let who = holder.isEmpty ? "another run" : "another run (process \(holder))"
            throw MediaError(.io, operation: "lock", item: item, message: """
                \(who) is writing into this output folder in a way that conflicts (an unsharded run, a merge, or the \
                same shard); wait for it to end or use another output folder
                """)
        }
        // The file names the exclusive holder; a shared holder clears it, so a message never names a run that
        // has ended.
        _ = ftruncate(fd, 0)
        if exclusive {
            let pid = Array("\(getpid())\n".utf8)
            _ = pwrite(fd, pid, pid.count, 0)
        }
        descriptor = fd
    }

    /// The locks of one batch run in `output`: the folder's lock, exclusive for an unsharded run, shared for a shard;
    /// and for a shard the exclusive lock of its record file `shardFile` (e.g. `cards-2-of-8.jsonl`).
    public static func forRun(in output: URL, shardFile: String?) throws -> [OutputLock] {
        let folder = try OutputLock(path: output.appendingPathComponent(".videofeed.lock").path,
                                    exclusive: shardFile == nil, item: output.path)
        guard let shardFile else { return [folder] }
        do {
            let card = try OutputLock(path: output.appendingPathComponent(".\(shardFile).lock").path,
                                      exclusive: true, item: output.appendingPathComponent(shardFile).path)
            return [folder, card]
        } catch {
            folder.release()
            throw error
        }
    }

    /// Releases the lock (the file stays, for the next run to lock).
    public func release() {
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
