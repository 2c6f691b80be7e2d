import EngineSupport
import Foundation

/// Follows a feed source and says when its listing may have changed, so that a server or a batch reads it again.
///
/// - **A folder** (``folder(_:refresh:)``): inotify on the folder and its sub-folders (``FolderWatcher``), and a
///   rescan every `refresh` seconds as the fallback for file systems inotify does not see into (NFS, SMB, FUSE) and
///   for a watch limit reached. A file still being written is held back by the loader's ``FileSettling``; while any
///   is, the watch wakes twice per quiet period to look again.
/// - **A listing URL** (``url(_:refresh:)``): the first page asked for every `refresh` seconds with `If-None-Match`
///   / `If-Modified-Since` (``RemoteFeedLoader/firstPageVersion(ifChangedFrom:)``); a new ETag, date or body is a
///   change.
/// - **A listing file** (``file(_:refresh:)``): its size and times checked every `refresh` seconds.
///
/// One consumer calls ``next()`` in a loop: it returns after a burst of events has settled (0.2 s without another,
/// 1 s at most), or when the periodic check finds a change.
public final class SourceWatch: Sendable {
    enum Kind: Sendable {
        case folder(DirectoryFeedLoader, FolderWatcher)
        case url(RemoteFeedLoader)
        case file(String)
    }

    let kind: Kind
    /// Seconds between periodic checks.
    public let refresh: Double
    private let signal: WatchWake
    /// The last version seen of a URL's first page, or a file's (size, times).
    private let lastVersion = Locked<AnyHashableSendable?>(nil)
    /// The last error of a periodic check (a URL that did not answer), until one succeeds.
    private let error = Locked<String?>(nil)

    private init(kind: Kind, refresh: Double, signal: WatchWake) {
        self.kind = kind
        self.refresh = max(0.05, refresh)
        self.signal = signal
    }

    /// Watches the folder `loader` lists (give it a ``FileSettling`` so that files still being written wait).
    public static func folder(_ loader: DirectoryFeedLoader, refresh: Double) -> SourceWatch {
        folder(loader, refresh: refresh, inotify: true)
    }

    /// ``folder(_:refresh:)``, without inotify when `inotify` is false (rescans only: the network file system case).
    static func folder(_ loader: DirectoryFeedLoader, refresh: Double, inotify: Bool) -> SourceWatch {
        let signal = WatchWake()
        let watcher = FolderWatcher(root: loader.root.path, settling: loader.settling, inotify: inotify) {
            signal.fire()
        }
        return SourceWatch(kind: .folder(loader, watcher), refresh: refresh, signal: signal)
    }

    /// Watches the listing at `remote`'s URL by asking for its first page every `refresh` seconds.
    public static func url(_ remote: RemoteFeedLoader, refresh: Double) -> SourceWatch {
        SourceWatch(kind: .url(remote), refresh: refresh, signal: WatchWake())
    }

    /// Watches a listing file by its size and times every `refresh` seconds.
    public static func file(_ url: URL, refresh: Double) -> SourceWatch {
        let watch = SourceWatch(kind: .file(url.path), refresh: refresh, signal: WatchWake())
        watch.lastVersion.set(Self.fileVersion(url.path))
        return watch
    }

    /// Whether changes are seen as they happen (a folder under inotify) rather than only by the periodic check.
    public var isLive: Bool {
        if case .folder(_, let watcher) = kind { return watcher.isWatching }
        return false
    }

    /// The last periodic check's error (a listing URL that did not answer), nil once one succeeds.
    public var lastError: String? { error.get() }

    /// Suspends until the source may have changed; false once ``stop()`` was called or the calling task is
    /// cancelled.
    public func next() async -> Bool {
        while true {
            if Task.isCancelled { return false }
            switch await signal.wait(upTo: interval) {
            case .stopped:
                return false
            case .fired:
                // A copy or an unpacked archive is a burst of events: one listing after it.
                let started = Date()
                while Date().timeIntervalSince(started) < 1 {
                    switch await signal.wait(upTo: 0.2) {
                    case .stopped: return false
                    case .fired: continue
                    case .timedOut: return true
                    }
                }
                return true
            case .timedOut:
                if await changedAtPeriodicCheck() { return true }
            }
        }
    }

    /// Wakes a pending ``next()`` with false and ends the folder's watch thread; safe from any thread.
    public func stop() {
        signal.stop()
        if case .folder(_, let watcher) = kind { watcher.stop() }
    }

    deinit { stop() }

    /// How long to wait for an event before the periodic check.
    private var interval: Double {
        if case .folder(let loader, _) = kind, let settling = loader.settling, settling.pending > 0 {
            return min(refresh, max(0.05, settling.quiet / 2))
        }
        return refresh
    }

    /// The periodic check: a folder is scanned again (the consumer's reload is the scan); a URL's first page or a
    /// file's stamp is compared with the last one seen.
    private func changedAtPeriodicCheck() async -> Bool {
        switch kind {
        case .folder:
            return true
        case .url(let remote):
            let known = lastVersion.get()?.value as? RemoteFeedLoader.Version
            do {
                let now = try await remote.firstPageVersion(ifChangedFrom: known)
                error.set(nil)
                lastVersion.set(AnyHashableSendable(now))
                // The first answer is a change too: the listing may have changed since the consumer first read it.
                return now != known
            } catch {
                self.error.set(Redaction.redacted(String(describing: error)))
                return false
            }
        case .file(let path):
            let now = Self.fileVersion(path)
            return lastVersion.withLock { last in
                defer { last = now }
                return last != now
            }
        }
    }

    /// A file's size, modification and status-change times, or nil when it cannot be read.
    private static func fileVersion(_ path: String) -> AnyHashableSendable? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return AnyHashableSendable([Int64(info.st_size), Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec),
                                    Int64(info.st_ctim.tv_sec), Int64(info.st_ctim.tv_nsec)])
    }
}

/// A hashable, sendable value of one of a few types (a URL's version, a file's stamp).
struct AnyHashableSendable: Hashable, Sendable {
    let value: any Hashable & Sendable

    init(_ value: some Hashable & Sendable) { self.value = value }

    static func == (lhs: Self, rhs: Self) -> Bool { AnyHashable(lhs.value) == AnyHashable(rhs.value) }
    func hash(into hasher: inout Hasher) { hasher.combine(AnyHashable(value)) }
}

/// A wake-up for one waiter at a time: fired (an event), timed out, or stopped for good. A fire with nobody waiting
/// is kept for the next wait.
final class WatchWake: Sendable {
    enum Wake: Sendable { case fired, timedOut, stopped }

    private struct State {
        var fired = false
        var stopped = false
        var waiter: (id: Int, continuation: CheckedContinuation<Wake, Never>)?
        var nextID = 0
        /// A timeout or cancellation that came before its wait was registered (a loaded machine), by wait id.
        var early: [Int: Wake] = [:]
    }

    private let state = Locked(State())

    /// Wakes the waiter (or the next one) with `.fired`.
    func fire() {
        state.withLock { s in
            if let waiter = s.waiter {
                s.waiter = nil
                waiter.continuation.resume(returning: .fired)
            } else {
                s.fired = true
            }
        }
    }

    /// Wakes the waiter, and every later one, with `.stopped`.
    func stop() {
        state.withLock { s in
            s.stopped = true
            if let waiter = s.waiter {
                s.waiter = nil
                waiter.continuation.resume(returning: .stopped)
            }
        }
    }

    /// Waits at most `seconds` for a fire; `.stopped` when stopped or the task is cancelled.
    func wait(upTo seconds: Double) async -> Wake {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        // The timer holds the signal strongly until it fires or is cancelled (when the wait ends): a weak reference's
        // side table, held by a timer still asleep when the process exits, is a leak to LeakSanitizer.
        let timer = Task { [self] in
            try? await Task.sleep(nanoseconds: UInt64(max(0, min(seconds, 86_400)) * 1e9))
            end(id, with: Task.isCancelled ? nil : .timedOut)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                state.withLock { s in
                    let early = s.early.removeValue(forKey: id)
                    s.early = s.early.filter { $0.key > id }
                    if s.stopped {
                        continuation.resume(returning: .stopped)
                    } else if let early {
                        continuation.resume(returning: early)
                    } else if s.fired {
                        s.fired = false
                        continuation.resume(returning: .fired)
                    } else {
                        s.waiter = (id, continuation)
                    }
                }
            }
        } onCancel: {
            self.end(id, with: .stopped)
        }
    }

    /// Resumes waiter `id`, if it waits, with `wake` (nil: nothing); one not registered yet gets it when it is.
    private func end(_ id: Int, with wake: Wake?) {
        guard let wake else { return }
        state.withLock { s in
            if let waiter = s.waiter, waiter.id == id {
                s.waiter = nil
                waiter.continuation.resume(returning: wake)
            } else if s.waiter == nil, id == s.nextID {
                s.early[id] = wake
            }
        }
    }
}
