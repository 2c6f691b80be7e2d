import Foundation

/// A value shared between a test and the threads it observes, behind an NSLock. Tests use this rather than
/// `Synchronization.Mutex`, whose futex ThreadSanitizer on Linux does not see (it reports the accesses as races).
/// `@unchecked Sendable`: `value` is only touched while holding `lock`.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
