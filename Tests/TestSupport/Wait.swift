import Foundation

/// Waits for an event by polling `condition` (every millisecond) on this thread: true as soon as it holds, false if it
/// still does not after `seconds`. The bound only turns a hang into a failure: a test asserts the result, it never
/// decides anything by how long the wait took.
public func waitFor(seconds: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.now() + seconds
    while !condition() {
        if DispatchTime.now() >= deadline { return false }
        usleep(1000)
    }
    return true
}

/// ``waitFor(seconds:_:)`` for async tests: polls every `milliseconds` (5 by default; more for a condition that asks a
/// server) with `Task.sleep`, so the cooperative pool's threads stay free for the code being waited on. The condition is
/// checked once more at the bound.
public func waitForAsync(seconds: Double = 30, every milliseconds: Int = 5,
                         _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = DispatchTime.now() + seconds
    while DispatchTime.now() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(milliseconds))
    }
    return try await condition()
}
