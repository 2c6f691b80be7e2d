import Foundation

/// A value behind an NSLock. Used instead of `Synchronization.Mutex`, whose futex ThreadSanitizer on Linux does not
/// see: the concurrent suites run under TSan in CI. `@unchecked Sendable`: `value` is only touched while holding `lock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
