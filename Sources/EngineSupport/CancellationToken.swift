import Synchronization

/// The engine's one cancellation token: a flag that stops work early, and handlers run once when it is set.
///
/// Media takes one to ``MediaFile``'s opening: calling ``cancel()`` from any thread makes a blocking open or read
/// return promptly (FFmpeg polls ``isCancelled`` through its interrupt callback, `AVIOInterruptCB`, so the read is a
/// lock-free atomic load), and the next packet boundary of a decode loop throw `MediaError.Kind.cancelled`. A prefetch
/// job carries one (`PrefetchJob.token`), and a serving job gets one from its pool; a preparer backed by FFmpeg links
/// the job's token to its file's with ``onCancel(_:)``. Cancellation cannot be undone.
public final class CancellationToken: Sendable {
    private let flag = Atomic<Bool>(false)
    /// The handlers still to run, and whether they have run (after which a new one runs at once). Guarded by the
    /// lock of `Locked`.
    private let handlers = Locked<(ran: Bool, list: [@Sendable () -> Void])>((false, []))

    /// A token that is not cancelled.
    public init() {}

    /// Whether ``cancel()`` has been called.
    public var isCancelled: Bool { flag.load(ordering: .acquiring) }

    /// Requests cancellation and runs each registered handler once, on this thread. Safe from any thread, any number
    /// of times.
    public func cancel() {
        flag.store(true, ordering: .releasing)
        let run: [@Sendable () -> Void] = handlers.withLock { h in
            guard !h.ran else { return [] }
            h.ran = true
            defer { h.list = [] }
            return h.list
        }
        for handler in run { handler() }
    }

    /// Runs `handler` on cancel: at once (on this thread) if the token is already cancelled.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow: Bool = handlers.withLock { h in
            if h.ran { return true }
            h.list.append(handler)
            return false
        }
        if runNow { handler() }
    }
}
