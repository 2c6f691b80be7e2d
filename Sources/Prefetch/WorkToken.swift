import EngineSupport

/// Cancellation for one prefetch job: a flag the job checks between packets, plus handlers run once on cancel (a
/// preparer backed by FFmpeg registers the interrupt of a blocking read there).
public final class WorkToken: Sendable {
    private let state = Locked<(cancelled: Bool, handlers: [@Sendable () -> Void])>((false, []))

    /// A token that is not cancelled.
    public init() {}

    /// Whether ``cancel()`` has been called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels, running each registered handler once. Safe from any thread.
    public func cancel() {
        let handlers: [@Sendable () -> Void] = state.withLock { s in
            guard !s.cancelled else { return [] }
            s.cancelled = true
            defer { s.handlers = [] }
            return s.handlers
        }
        for handler in handlers { handler() }
    }

    /// Runs `handler` on cancel (at once if already cancelled).
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow: Bool = state.withLock { s in
            if s.cancelled { return true }
            s.handlers.append(handler)
            return false
        }
        if runNow { handler() }
    }
}
