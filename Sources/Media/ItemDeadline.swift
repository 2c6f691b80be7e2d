import Dispatch
import EngineSupport
import Foundation
import Synchronization

/// One item's wall-clock limit in a batch: what is left of `limit` (counted from when the item started, so a
/// version check before opening counts too) becomes the item's ``OpenOptions/itemTimeLimit`` and caps its open and
/// read timeouts, and a timer cancels the item's ``token`` when it runs out. ``timedOut`` then tells a cancellation by
/// the clock from one by the caller. Used on the worker thread that runs the item; ``finish()`` stops the timer.
public final class ItemDeadline {
    /// The token to open the item with.
    public let token = CancellationToken()
    /// The open options with the item's limit applied.
    public let options: OpenOptions
    private let fired = Flag()
    private var timer: DispatchWorkItem?

    /// - Parameters:
    ///   - limit: seconds the whole item may take, or nil for none.
    ///   - started: when the item started.
    ///   - options: the batch's open options.
    public init(limit: Double?, started: Date, options base: OpenOptions) {
        var options = base
        // What is left of the item's limit (at least a moment, so the open can fail cleanly).
        let remaining = limit.map { max(0.001, $0 - Date().timeIntervalSince(started)) }
        options.itemTimeLimit = remaining
        if let remaining {
            options.openTimeout = min(remaining, options.openTimeout ?? remaining)
            options.readTimeout = min(remaining, options.readTimeout ?? remaining)
            let token = self.token, fired = self.fired
            let work = DispatchWorkItem {
                fired.value.store(true, ordering: .releasing)
                token.cancel()
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + remaining, execute: work)
            timer = work
        }
        self.options = options
    }

    deinit { timer?.cancel() }

    /// Whether the timer cancelled the item.
    public var timedOut: Bool { fired.value.load(ordering: .acquiring) }

    /// Whether `error` means the item ran out of time: the timer's cancellation, or Media's own item deadline
    /// (the same limit) once `limit` seconds have passed since `started`.
    public func ranOut(_ error: MediaError, limit: Double?, started: Date) -> Bool {
        (error.kind == .cancelled && timedOut)
            || (error.kind == .timedOut && limit.map { Date().timeIntervalSince(started) >= $0 } == true)
    }

    /// Stops the timer: a finished item's timer never fires.
    public func finish() {
        timer?.cancel()
        timer = nil
    }
}

/// A flag the timer sets from another thread (an `Atomic`, shared by reference).
private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}

