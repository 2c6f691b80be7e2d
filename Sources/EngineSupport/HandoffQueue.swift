import Foundation

/// A bounded first-in first-out queue that hands elements from a producing thread to a consuming one, with memory
/// bounded by ``capacity``: ``put(_:)`` waits while the queue is full, ``take()`` while it is empty.
///
/// The producer ends with ``finish()`` (after its last element, or on failure); the consumer takes what is left and
/// then gets nil. A consumer that stops early calls ``cancel()``: the elements waiting are dropped and the
/// producer's next ``put(_:)`` returns false, so it can stop; ``waitUntilFinished()`` then waits for the producer to
/// call ``finish()``, after which it no longer touches anything it shared. Everything the producer did before
/// ``finish()`` happens before ``take()`` returns nil and before ``waitUntilFinished()`` returns.
///
/// Built on `NSCondition` (a pthread mutex and condition variable) for the reason ``Locked`` gives: ThreadSanitizer
/// sees the hand-over. `@unchecked Sendable` is safe because `items`, `finished` and `cancelled` are only touched while
/// holding `condition`.
public final class HandoffQueue<Element: Sendable>: @unchecked Sendable {
    /// The most elements that wait at once.
    public let capacity: Int
    private let condition = NSCondition()
    /// Oldest first; never more than `capacity`, so removing from the front costs little.
    private var items: [Element] = []
    private var finished = false
    private var cancelled = false

    /// An empty queue holding at most `capacity` (at least 1) elements.
    public init(capacity: Int) {
        precondition(capacity >= 1, "HandoffQueue: capacity must be at least 1")
        self.capacity = capacity
        items.reserveCapacity(capacity)
    }

    /// Producer: appends `element`, waiting while the queue is full. Returns false, dropping `element`, when the
    /// consumer cancelled.
    @discardableResult
    public func put(_ element: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        precondition(!finished, "HandoffQueue: put after finish")
        while !cancelled && items.count >= capacity { condition.wait() }
        if cancelled { return false }
        items.append(element)
        condition.broadcast()
        return true
    }

    /// Producer: no element follows. Wakes the consumer. Call it exactly once, as the producer's last use of
    /// anything it shares with the consumer.
    public func finish() {
        condition.lock()
        defer { condition.unlock() }
        finished = true
        condition.broadcast()
    }

    /// Consumer: the oldest element, waiting while the queue is empty; nil once the producer finished and every
    /// element was taken, or after ``cancel()``.
    public func take() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while !finished && !cancelled && items.isEmpty { condition.wait() }
        guard !cancelled, !items.isEmpty else { return nil }
        let element = items.removeFirst()
        condition.broadcast()
        return element
    }

    /// Consumer: stops the hand-over. The elements waiting are dropped (released outside the lock) and every
    /// later ``put(_:)`` returns false at once. Idempotent.
    public func cancel() {
        condition.lock()
        let dropped = items
        items.removeAll()
        cancelled = true
        condition.broadcast()
        condition.unlock()
        _ = dropped
    }

    /// Consumer: waits until the producer called ``finish()``.
    public func waitUntilFinished() {
        condition.lock()
        defer { condition.unlock() }
        while !finished { condition.wait() }
    }

    /// How many elements wait now (a snapshot).
    public var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return items.count
    }
}

extension HandoffQueue {
    /// A two-stage pipeline: `produce` runs on a new thread and puts elements into a queue of `capacity`, while
    /// `consume` takes them on the calling thread in the order they were put, until the producer ends or `consume`
    /// returns false. The producer gets at most `capacity` elements ahead, so its work overlaps the consumer's and
    /// memory stays bounded. Returns when both have ended: the producer thread's work happens before the return.
    ///
    /// - Parameters:
    ///   - capacity: the most elements waiting for `consume` (at least 1).
    ///   - threadName: the producer thread's name, as debuggers and `top -H` show it.
    ///   - stackSize: the producer thread's stack size in bytes.
    ///   - produce: puts elements with ``put(_:)`` and stops when it returns false; must not call ``finish()``
    ///     (it is called when `produce` returns or throws).
    ///   - consume: gets each element; returns false to stop (the elements produced ahead are then dropped).
    /// - Throws: what `consume` throws, or else what `produce` throws, after `consume` had every element put before.
    public static func run(capacity: Int, threadName: String, stackSize: Int = 8 << 20,
                           produce: @escaping @Sendable (HandoffQueue<Element>) throws -> Void,
                           consume: (Element) throws -> Bool) throws {
        let queue = HandoffQueue<Element>(capacity: capacity)
        let failure = Locked<(any Error)?>(nil)
        let thread = Thread {
            // finish() is the producer's last touch of anything shared.
            defer { queue.finish() }
            do { try produce(queue) } catch { failure.set(error) }
        }
        thread.name = threadName
        thread.stackSize = stackSize
        thread.start()
        defer {
            // Stopping early (or on a throw): drop what waits and let the producer see it, then wait for its end.
            queue.cancel()
            queue.waitUntilFinished()
        }
        while let element = queue.take() {
            guard try consume(element) else { return }
        }
        // take() returned nil without a cancel: the producer finished.
        if let error = failure.withLock({ $0 }) { throw error }
    }
}
