import Foundation
import Prefetch
import TestSupport
import EngineSupport

/// A frame the mock "decodes": which item, which frame, how big.
struct MockFrame: Sendable, Equatable {
    var index: Int
    var number: Int
    var bytes: Int
}

/// A controllable preparer: per-item frame sizes and durations, items that fail, an optional gate that holds every
/// job before its first frame until the test opens it, and a record of what ran.
final class MockPreparer: PrefetchPreparer {
    struct Log: Sendable {
        var started: [Int] = []
        var finished: [Int] = []
        var sawCancel: [Int] = []
        var maxConcurrent = 0
        var running = 0
    }

    let frameBytes: Int
    let frameDuration: Double
    let failing: Set<Int>
    let framesPerItem: Int
    let gate: DispatchSemaphore?
    /// Seconds each frame takes to "decode".
    let frameDelay: Double
    /// NSLock rather than `Synchronization.Mutex`: ThreadSanitizer on Linux does not see Mutex's futex and reports
    /// the accesses it protects as races.
    let log = Locked(Log())
    /// Notified after each change to `log`, for a test that waits for one.
    let changes = ChangeSignal()

    init(frameBytes: Int = 100, frameDuration: Double = 0.25, failing: Set<Int> = [], framesPerItem: Int = 1000,
         gated: Bool = false, frameDelay: Double = 0) {
        self.frameDelay = frameDelay
        self.frameBytes = frameBytes
        self.frameDuration = frameDuration
        self.failing = failing
        self.framesPerItem = framesPerItem
        self.gate = gated ? DispatchSemaphore(value: 0) : nil
    }

    /// Lets `n` gated jobs through.
    func open(_ n: Int = 1000) { for _ in 0..<n { gate?.signal() } }

    struct Failure: Error, CustomStringConvertible {
        var index: Int
        var description: String { "item \(index) is corrupt" }
    }

    func prepare(_ job: PrefetchJob<MockFrame>, from handle: Int?) throws -> Int? {
        log.withLock {
            $0.started.append(job.index)
            $0.running += 1
            $0.maxConcurrent = max($0.maxConcurrent, $0.running)
        }
        changes.notify()
        defer {
            let cancelled = job.token.isCancelled
            log.withLock {
                $0.running -= 1
                $0.finished.append(job.index)
                if cancelled && !$0.sawCancel.contains(job.index) { $0.sawCancel.append(job.index) }
            }
            changes.notify()
        }
        if let gate {
            while gate.wait(timeout: .now() + 0.01) == .timedOut {
                if job.token.isCancelled { return handle ?? 0 }
            }
        }
        if failing.contains(job.index) { throw Failure(index: job.index) }
        // Without a handle the item's held frames are "decoded" again first (instantly), as MediaPreparer does.
        var produced = handle ?? job.heldFrames
        if handle == nil, !job.reached(.probed) { return produced }
        var delivered = 0
        while produced < framesPerItem {
            if job.token.isCancelled { return produced }
            if job.startsWithFirstFrame || delivered > 0, job.admit(bytes: frameBytes) != .go { return produced }
            if frameDelay > 0 { Thread.sleep(forTimeInterval: frameDelay) }
            delivered += 1
            let more = job.deliver(MockFrame(index: job.index, number: produced, bytes: frameBytes))
            produced += 1
            if !more { break }
        }
        return produced
    }

    func byteCount(of frame: MockFrame) -> Int { frame.bytes }
    func duration(of frame: MockFrame) -> Double { frameDuration }
}

