import EngineSupport
import Foundation

/// When a file in a watched folder is complete enough to list: not while it is being written.
///
/// A file is held back while
/// - a writer holds it: the folder's watch (``FolderWatcher``, inotify) saw it created or modified and has not seen
///   it closed after writing; or
/// - it is still changing: it was modified within the last ``quiet`` seconds by its own modification time, and this
///   process has not seen its size and times stay the same for ``quiet`` seconds (which decides when the file
///   server's clock differs, on a network file system).
///
/// A file the watch saw closed after writing, or moved in whole (a rename into the folder), is complete at once
/// unless a writer opened it again. Without inotify (a network file system, or the watch limit reached) the quiet
/// rule alone decides, at each rescan.
public final class FileSettling: Sendable {
    /// What the watch saw of a path, newest last.
    enum Seen: Sendable {
        /// Created or modified, not yet closed.
        case writing
        /// Closed after writing, or renamed into the folder.
        case closed
    }

    private struct Observation {
        var size: Int64
        var changed: Double
        /// When this process first saw the file with this size and time.
        var since: Double
    }

    private struct State {
        var seen: [String: Seen] = [:]
        var observations: [String: Observation] = [:]
        var pending = 0
    }

    /// Seconds a file must stay unchanged when no close was seen.
    public let quiet: Double
    /// Seconds since 1970 now: the wall clock, or a test's.
    private let clock: @Sendable () -> Double
    private let state = Locked(State())

    /// A rule with `quiet` seconds of calm (1 s by default), on `clock` (the wall clock unless a test drives one).
    public init(quiet: Double = 1, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.quiet = max(0, quiet)
        self.clock = clock
    }

    /// Files held back at the last scan: the watch looks again soon while there are any.
    public var pending: Int { state.withLock { $0.pending } }

    /// The watch saw `path` written (created or modified).
    func sawWriting(_ path: String) { state.withLock { $0.seen[path] = .writing } }

    /// The watch saw `path` closed after writing, or moved in.
    func sawClosed(_ path: String) { state.withLock { $0.seen[path] = .closed } }

    /// The watch saw `path` deleted or moved away.
    func sawGone(_ path: String) {
        state.withLock {
            $0.seen[path] = nil
            $0.observations[path] = nil
        }
    }

    /// Whether the regular file at `path` (an absolute path, as the folder's walk names it) is complete now. Each
    /// call is one observation of it; call ``finishScan(present:heldBack:)`` after a scan.
    func isComplete(_ path: String) -> Bool { isComplete(path, now: clock()) }

    /// ``isComplete(_:)`` at `now`.
    func isComplete(_ path: String, now: Double) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let size = Int64(info.st_size)
        let modified = Self.seconds(info.st_mtim)
        let changed = max(modified, Self.seconds(info.st_ctim))
        return state.withLock { s in
            if s.seen[path] == .writing {
                s.observations[path] = nil
                return false
            }
            var observation = s.observations[path] ?? Observation(size: size, changed: changed, since: now)
            if observation.size != size || observation.changed != changed {
                observation = Observation(size: size, changed: changed, since: now)
            }
            s.observations[path] = observation
            if s.seen[path] == .closed { return true }
            // A writer moves the modification time as it writes (the status-change time also moves when a file
            // is only renamed or its time set, so it says nothing of writing, and is only compared between looks).
            return now - modified >= quiet || now - observation.since >= quiet
        }
    }

    /// Ends a scan: `heldBack` files were not complete; what is known of files no longer in the folder is dropped.
    func finishScan(present: Set<String>, heldBack: Int) {
        state.withLock { s in
            s.pending = heldBack
            s.observations = s.observations.filter { present.contains($0.key) }
            s.seen = s.seen.filter { present.contains($0.key) }
        }
    }

    private static func seconds(_ time: timespec) -> Double {
        Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
