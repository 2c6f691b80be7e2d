import Foundation

/// A value shared between threads, read and written only inside ``withLock(_:)``: the engine's one lock wrapper
/// (swift-nio's `NIOLockedValueBox` is the model).
///
/// Built on `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`: on Linux `Mutex` waits on a futex that
/// ThreadSanitizer cannot see, so TSan reports the protected accesses as races; a pthread mutex it understands, and the
/// concurrent suites run under TSan in CI. `@unchecked Sendable` is safe because `value` is only touched while holding
/// `lock`.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = Lock()
    private var value: Value

    /// A lock around `value`.
    public init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }

    /// A copy of the value, read under the lock.
    public func get() -> Value where Value: Sendable {
        withLock { $0 }
    }

    /// Replaces the value under the lock.
    public func set(_ newValue: Value) where Value: Sendable {
        withLock { $0 = newValue }
    }
}

/// A mutual-exclusion lock guarding state that lives elsewhere (an object's own properties), the way swift-nio's
/// `NIOLock` sits beside `NIOLockedValueBox`: prefer ``Locked`` when the guarded state can live inside it. A pthread
/// mutex (`NSLock`) for the reason ``Locked`` gives.
public final class Lock: Sendable {
    private let lock = NSLock()

    /// An unlocked lock.
    public init() {}

    /// Runs `body` holding the lock.
    public func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
