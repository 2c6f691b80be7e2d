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

/// ``waitFor(seconds:_:)`` for async tests: polls every 5 ms with `Task.sleep`, so the cooperative pool's threads stay
/// free for the code being waited on.
public func waitForAsync(seconds: Double = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = DispatchTime.now() + seconds
    while try await !condition() {
        if DispatchTime.now() >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}
