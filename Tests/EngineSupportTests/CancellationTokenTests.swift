import Dispatch
import EngineSupport
import Testing

/// The engine's one cancellation token: the flag, and handlers run exactly once whoever cancels and whenever they
/// were added.
@Suite struct CancellationTokenTests {
    @Test func aHandlerRunsOnceOnCancelAndAtOnceWhenAddedAfter() {
        let token = CancellationToken()
        let count = Locked(0)
        token.onCancel { count.withLock { $0 += 1 } }
        #expect(!token.isCancelled && count.get() == 0)
        token.cancel()
        token.cancel()
        #expect(token.isCancelled && count.get() == 1)
        token.onCancel { count.withLock { $0 += 10 } }
        #expect(count.get() == 11)
    }

    @Test func manyThreadsCancellingAndAddingRunEachHandlerExactlyOnce() {
        for _ in 0..<50 {
            let token = CancellationToken()
            let runs = Locked([Int](repeating: 0, count: 16))
            DispatchQueue.concurrentPerform(iterations: 32) { i in
                if i % 2 == 0 {
                    let slot = i / 2
                    token.onCancel { runs.withLock { $0[slot] += 1 } }
                } else {
                    token.cancel()
                }
            }
            #expect(token.isCancelled)
            #expect(runs.get() == [Int](repeating: 1, count: 16))
        }
    }
}
