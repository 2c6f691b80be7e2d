import Dispatch
import EngineSupport
import Foundation
import Testing

/// Waiting for a change: a waiter wakes at the notification that makes its condition true, takes what it waited for
/// exactly once, and returns false at its bound when the change never comes.
@Suite struct ChangeSignalTests {
    @Test("a waiter wakes at each change until its condition holds, whichever thread makes it")
    func wakesAtTheChangeThatMakesItTrue() {
        let signal = ChangeSignal()
        let value = Locked(0)
        let tests = Locked(0)
        let producer = Thread {
            for _ in 0..<100 {
                value.withLock { $0 += 1 }
                signal.notify()
            }
        }
        producer.start()
        let held = signal.wait(timeout: 30) {
            tests.withLock { $0 += 1 }
            return value.get() == 100
        }
        #expect(held && value.get() == 100)
        // Tested at the start and after notifications only: at most once per change, plus the first.
        #expect(tests.get() <= 101)
    }

    @Test("a condition that never holds returns false at the bound, tested once more there")
    func falseAtTheBound() {
        let signal = ChangeSignal()
        let tests = Locked(0)
        let held = signal.wait(timeout: 0.05) {
            tests.withLock { $0 += 1 }
            return false
        }
        #expect(!held && tests.get() == 2)
    }

    @Test("many waiters taking one item each: every item taken once, every waiter answered")
    func waitersTakeItemsOnce() async {
        let signal = ChangeSignal()
        let items = Locked<[Int]>([])
        let taken = Locked<[Int]>([])
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await signal.wait(timeout: 30) {
                        items.withLock { list in
                            guard let first = list.first else { return false }
                            list.removeFirst()
                            taken.withLock { $0.append(first) }
                            return true
                        }
                    }
                }
            }
            for n in 0..<8 {
                items.withLock { $0.append(n) }
                signal.notify()
            }
            var answered = 0
            for await held in group where held { answered += 1 }
            #expect(answered == 8)
        }
        #expect(taken.get().sorted() == Array(0..<8))
    }
}

extension ChangeSignalTests {
    @Test("the bound holds while notifications keep coming: a condition that never holds returns false while they still come")
    func theBoundHoldsUnderNotifications() {
        let signal = ChangeSignal()
        let stop = Locked(false)
        let producerEnded = Locked(false)
        // Notifies until told to stop, or gives up after 30 s.
        let producer = Thread {
            let end = DispatchTime.now().uptimeNanoseconds + 30_000_000_000
            while !stop.get(), DispatchTime.now().uptimeNanoseconds < end { signal.notify() }
            producerEnded.set(true)
        }
        producer.start()
        let held = signal.wait(timeout: 0.2) {
            // Each test overlaps some notifications, as a condition that waits for another queue does.
            usleep(100)
            return false
        }
        // The wait ended on its own bound while notifications still came (a wait held open by them would end only
        // when the producer gave up).
        #expect(!held && !producerEnded.get())
        stop.set(true)
    }
}
