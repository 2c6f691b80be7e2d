import Foundation

/// A value shared between threads (a batch's workers), read and written only inside ``withLock(_:)``.
///
/// Built on `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`: on Linux `Mutex` waits on a futex that
/// ThreadSanitizer cannot see, so TSan reports the protected accesses as races; a pthread mutex it understands.
/// `@unchecked Sendable` is safe because `value` is only touched while holding `lock`.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// A lock around `value`.
    public init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
