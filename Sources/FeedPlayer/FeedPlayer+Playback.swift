import EngineSupport
import Foundation

extension FeedPlayer {
    /// The next frame of the current item for playback (the pull API): its first frame, then the decoded frames in
    /// order, looping at the end of the item. Nil when the next frame is not decoded yet — prefetching keeps about a
    /// second buffered for the current item, refilled as frames are taken.
    public func nextPlaybackFrame() -> PlayerFrame? {
        state.withLock {
            if !playheadShownFirst {
                guard let first = scheduler.snapshot(current)?.firstFrame else { return nil }
                playheadShownFirst = true
                return first
            }
            guard let frame = scheduler.takeBufferedFrame(current) else { return nil }
            countShown()
            return frame
        }
    }

    /// Plays the current item headless: hands each frame to `sink` at its presentation time (scaled by `speed`),
    /// decoding ahead within the budget and looping the item at its end. A swipe (``move(to:)``) or
    /// ``PlaybackSession/stop()`` ends it. A frame that is due but not decoded yet counts a stall.
    public func play(speed: Double = 1, sink: @escaping @Sendable (PlayerFrame) -> Void) -> PlaybackSession {
        let session = PlaybackSession()
        let generation = state.withLock { self.generation }
        let thread = Thread { [weak self] in
            self?.runPlayback(generation: generation, speed: max(speed, 0.01), session: session, sink: sink)
            session.finished()
        }
        thread.name = "videofeed.playback"
        thread.start()
        return session
    }

    private func runPlayback(generation: Int, speed: Double, session: PlaybackSession,
                             sink: @Sendable (PlayerFrame) -> Void) {
        var origin = now()
        var elapsed = 0.0  // media seconds played
        var stalledSince: Double?
        while !session.isStopped, state.withLock({ self.generation }) == generation {
            guard let frame = nextPlaybackFrame() else {
                let t = now()
                if stalledSince == nil && t >= origin + elapsed / speed {
                    stalledSince = t
                    state.withLock {
                        stalls += 1
                        emit(.stall(index: current))
                    }
                }
                Thread.sleep(forTimeInterval: 0.002)
                continue
            }
            if let since = stalledSince {
                origin += now() - since  // the clock waits for the late frame
                stalledSince = nil
            }
            // Wait for the frame's time in short slices, so a stop or a swipe ends playback at once even while a
            // still picture is held for seconds.
            var stopped = false
            while !stopped, case let wait = origin + elapsed / speed - now(), wait > 0 {
                Thread.sleep(forTimeInterval: min(wait, 0.005))
                stopped = session.isStopped || state.withLock({ self.generation }) != generation
            }
            guard !stopped, !session.isStopped, state.withLock({ self.generation }) == generation else { break }
            sink(frame)
            session.played()
            elapsed += frame.duration
        }
    }
}

/// A running ``FeedPlayer/play(speed:sink:)``.
public final class PlaybackSession: Sendable {
    private let flags = Locked<(stopped: Bool, done: Bool, frames: Int)>((false, false, 0))
    private let doneSignal = DispatchSemaphore(value: 0)

    init() {}

    /// Stops playback; the sink gets no further frame after ``wait(timeout:)`` returns.
    public func stop() { flags.withLock { $0.stopped = true } }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { flags.withLock { $0.stopped } }

    /// Frames handed to the sink so far.
    public var framesPlayed: Int { flags.withLock { $0.frames } }

    /// Blocks until playback has ended (stopped or swiped away) or `timeout` passes; returns whether it ended.
    @discardableResult
    public func wait(timeout: Double) -> Bool {
        if flags.withLock({ $0.done }) { return true }
        guard doneSignal.wait(timeout: .now() + timeout) == .success else { return false }
        doneSignal.signal()
        return true
    }

    func played() { flags.withLock { $0.frames += 1 } }

    func finished() {
        flags.withLock { $0.done = true }
        doneSignal.signal()
    }
}
