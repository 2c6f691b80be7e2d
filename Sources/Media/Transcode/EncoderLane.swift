import EngineSupport
import Foundation

/// A thread of its own for one output of a transcode (an encoder and the muxers its packets go to), so that
/// encoding overlaps the decoding and filtering of the frames after, and the renditions of one item encode at the
/// same time.
///
/// The pipeline's thread submits work in the order it would have run it; the lane runs it in that order. Each
/// output is touched by its lane alone from its first submission until ``join()`` returns, so every encoder sees
/// the same frames in the same order as a single thread would give it, and makes the same bytes (x264 runs one
/// thread per encoder for that reason). At most `capacity` pieces of work wait, which bounds the frames in flight.
final class EncoderLane {
    private let queue: HandoffQueue<Work>
    private let failure = Locked<(any Error)?>(nil)
    private let abandoned = Locked(false)
    private let stopped = Stop()
    private var joined = false

    /// Starts the lane's thread, named `name` for debuggers and `top -H`.
    init(name: String, capacity: Int = 4) {
        queue = HandoffQueue(capacity: capacity)
        let state = LaneState(queue: queue, failure: failure, abandoned: abandoned, stopped: stopped)
        // FFmpeg's messages are kept per thread; an encoder's failure is formatted on the lane, where it happened.
        let thread = Thread {
            defer { state.stopped.mark() }
            while let work = state.queue.take() {
                if state.abandoned.get() { continue }
                do {
                    try work.run()
                } catch {
                    state.failure.set(error)
                    // The producer's next submit sees the failure instead of waiting on a queue nobody empties.
                    state.queue.cancel()
                    return
                }
            }
        }
        thread.name = name
        thread.stackSize = 8 << 20
        thread.start()
    }

    deinit {
        precondition(joined, "EncoderLane: released before join() or abandon()")
    }

    /// Runs `body` on the lane after everything submitted before it.
    /// - Throws: the error of earlier work on the lane, once one failed (`body` is then dropped).
    func submit(_ body: @escaping () throws -> Void) throws {
        if let error = failure.get() { throw error }
        if !queue.put(Work(run: body)), let error = failure.get() { throw error }
    }

    /// Waits until everything submitted ran: afterwards the outputs the work touched are the caller's again.
    /// - Throws: the first error of the lane's work.
    func join() throws {
        end()
        if let error = failure.get() { throw error }
    }

    /// Whether ``abandon()`` was called: work taken from now on is dropped.
    var isAbandoned: Bool { abandoned.get() }

    /// Drops the work still waiting (the pipeline failed or was cancelled) and waits for the lane to stop.
    func abandon() {
        abandoned.set(true)
        end()
    }

    private func end() {
        guard !joined else { return }
        joined = true
        queue.finish()
        stopped.wait()
    }

    /// The end of the lane's thread, which `join` and `abandon` wait for.
    ///
    /// `@unchecked Sendable` because `running` is only touched while holding `condition`.
    private final class Stop: @unchecked Sendable {
        private let condition = NSCondition()
        private var running = true

        /// Called last on the lane's thread.
        func mark() {
            condition.lock()
            running = false
            condition.broadcast()
            condition.unlock()
        }

        /// Returns once ``mark()`` was called.
        func wait() {
            condition.lock()
            while running { condition.wait() }
            condition.unlock()
        }
    }

    /// A piece of work in transit to the lane.
    ///
    /// `@unchecked Sendable` because what it captures (an output, a frame or packet) is handed over, not shared: the
    /// pipeline's thread does not touch it again until ``EncoderLane/join()``, and the ``HandoffQueue``'s
    /// `NSCondition` orders the submission before the lane's run, as `Stop`'s orders the run before `join` returns.
    private struct Work: @unchecked Sendable {
        let run: () throws -> Void
    }

    /// What the lane's thread uses, passed to it rather than reached through `self`.
    ///
    /// Each part is itself safe across threads: the queue, the `Locked` values and `Stop` lock inside.
    private struct LaneState: Sendable {
        let queue: HandoffQueue<Work>
        let failure: Locked<(any Error)?>
        let abandoned: Locked<Bool>
        let stopped: Stop
    }
}
