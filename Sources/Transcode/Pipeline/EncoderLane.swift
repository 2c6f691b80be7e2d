import EngineSupport
import Foundation
import Media

/// A thread of its own for one output of a transcode (an encoder and the muxers its packets go to), so that
/// encoding overlaps the decoding and filtering of the frames after, and the renditions of one item encode at the
/// same time: a ``ThreadLane`` (the engine's one lane type) with a bounded queue, and the first failure kept.
///
/// The pipeline's thread submits work in the order it would have run it; the lane runs it in that order. Each
/// output is touched by its lane alone from its first submission until ``join()`` returns, so every encoder sees
/// the same frames in the same order as a single thread would give it, and makes the same bytes (x264 runs one
/// thread per encoder for that reason). At most `capacity` pieces of work wait, which bounds the frames in flight.
final class EncoderLane {
    private let lane: ThreadLane
    private let failure = Locked<(any Error)?>(nil)
    private let abandoned = Locked(false)
    private var joined = false

    /// Starts the lane's thread, named `name` for debuggers and `top -H`.
    init(name: String, capacity: Int = 4) {
        // x264 and libavcodec want more stack than a thread's default.
        lane = ThreadLane(name: name, stackSize: 8 << 20, capacity: capacity)
    }

    deinit {
        precondition(joined, "EncoderLane: released before join() or abandon()")
    }

    /// Runs `body` on the lane after everything submitted before it. FFmpeg's messages are kept per thread, so an
    /// encoder's failure is formatted on the lane, where it happened.
    /// - Throws: the error of earlier work on the lane, once one failed (`body` is then dropped).
    func submit(_ body: @escaping () throws -> Void) throws {
        if let error = failure.get() { throw error }
        let work = Work(run: body), failure = self.failure, abandoned = self.abandoned
        lane.async {
            // After a failure or an abandon the work left is dropped: the lane drains quickly, so a producer waiting
            // for room is let go.
            guard !abandoned.get(), failure.get() == nil else { return }
            do {
                try work.run()
            } catch {
                failure.set(error)
            }
        }
        if let error = failure.get() { throw error }
    }

    /// Waits until everything submitted ran: afterwards the outputs the work touched are the caller's again.
    /// - Throws: the first error of the lane's work.
    func join() throws {
        end()
        if let error = failure.get() { throw error }
    }

    /// Whether ``abandon()`` was called: work taken from now on is dropped.
    var isAbandoned: Bool { abandoned.get() }

    /// Drops the work still waiting (the pipeline failed or was cancelled) and waits for the running piece to end.
    func abandon() {
        abandoned.set(true)
        end()
    }

    private func end() {
        guard !joined else { return }
        joined = true
        // Returns once every piece submitted before has run (or been dropped): the lane's `sync` orders them.
        lane.sync {}
        lane.stop()
    }

    /// A piece of work in transit to the lane.
    ///
    /// `@unchecked Sendable` because what it captures (an output, a frame or packet) is handed over, not shared: the
    /// pipeline's thread does not touch it again until ``EncoderLane/join()``, and the lane's `NSCondition` orders the
    /// submission before the lane's run, as its `sync` orders the run before `join` returns.
    private struct Work: @unchecked Sendable {
        let run: () throws -> Void
    }
}
