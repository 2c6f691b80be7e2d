import EngineSupport
import Foundation

extension FeedPlayer {
    /// The next frame of the current item for playback (the pull API): its first frame, then the decoded frames in
    /// order, looping at the end of the item. Nil when the next frame is not decoded yet — prefetching keeps about a
    /// second buffered for the current item, refilled as frames are taken.
    ///
    /// The player's lock is not held while the frame is taken from the scheduler (which waits for its control
    /// queue): a swipe never waits behind playback. A frame taken for an item the viewer swiped away from meanwhile
    /// is let go, and nil returned.
    public func nextPlaybackFrame() -> PlayerFrame? { nextPlaybackFrame(of: nil) }

    /// ``nextPlaybackFrame()`` for the item shown at move `expected` (the player's `generation`) only: nil once the
    /// viewer moved on, so that a playback session never takes the next item's frames.
    func nextPlaybackFrame(of expected: Int?) -> PlayerFrame? {
        let (index, shownFirst, seen) = state.withLock { (current, playheadShownFirst, generation) }
        if let expected, seen != expected { return nil }
        if !shownFirst {
            guard let first = scheduler.published(index).first else { return nil }
            return state.withLock {
                guard generation == seen else { return nil }
                playheadShownFirst = true
                return first
            }
        }
        guard let frame = scheduler.takeBufferedFrame(index) else { return nil }
        return state.withLock {
            guard generation == seen else { return nil }
            countShown()
            return frame
        }
    }

    /// ``nextPlaybackFrame()``, waiting for it: returns as soon as the frame is decoded (woken by the scheduler's
    /// event that buffered or published it, not by polling), or nil if none is after `timeout` seconds. A render loop
    /// that has nothing to show blocks here instead of spinning.
    public func nextPlaybackFrame(waitingUpTo timeout: Double) -> PlayerFrame? {
        var frame: PlayerFrame?
        _ = scheduler.changes.wait(timeout: timeout) {
            frame = nextPlaybackFrame()
            return frame != nil
        }
        return frame
    }

    /// Plays the current item headless: hands each frame to `sink` at its presentation time (scaled by `speed`),
    /// decoding ahead within the budget and looping the item at its end. A swipe (``move(to:)``) or
    /// ``PlaybackSession/stop()`` ends it. A frame that is due but not decoded yet counts a stall: the clock waits
    /// for it, and the session counts the stall, its time and the frames it cost (``PlaybackSession/statistics``).
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
        /// Whether the frame about to be shown was late (its stall is counted once, when it is shown).
        var late = false
        defer {
            // A stall still going on when playback ends counts until then.
            if let since = stalledSince {
                let waited = now() - since
                session.stalled(seconds: waited)
                state.withLock { stallSeconds += waited }
            }
        }
        while !session.isStopped, state.withLock({ self.generation }) == generation {
            var next = nextPlaybackFrame(of: generation)
            if next == nil {
                let t = now()
                let due = origin + elapsed / speed
                if stalledSince == nil && t >= due {
                    stalledSince = t
                    session.stallBegan()
                    state.withLock {
                        stalls += 1
                        emit(.stall(index: current))
                    }
                }
                // Woken by the scheduler's event that decodes it (or a swipe's), in short slices so that a stop ends
                // playback at once, and a frame not due yet is counted as a stall as soon as it falls due.
                let slice = stalledSince == nil ? min(0.005, max(0.0005, due - t)) : 0.005
                _ = scheduler.changes.wait(timeout: slice) {
                    if session.isStopped { return true }
                    next = nextPlaybackFrame(of: generation)
                    return next != nil
                }
            }
            guard let frame = next else { continue }
            if let since = stalledSince {
                let waited = now() - since
                origin += waited  // the clock waits for the late frame
                session.stalled(seconds: waited)
                state.withLock { stallSeconds += waited }
                stalledSince = nil
                late = true
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
            session.played(duration: frame.duration / speed, late: late)
            late = false
            elapsed += frame.duration
        }
    }
}

/// What one ``PlaybackSession`` played: how smoothly, frame by frame.
public struct PlaybackStatistics: Sendable, Codable, Equatable {
    /// Frames handed to the sink.
    public var framesShown = 0
    /// Frames shown at their time: every shown frame but those playback had to wait for (one per stall).
    public var framesOnTime = 0
    /// Frames that fell due while playing: those shown, plus those an unstalled player would have shown in the time
    /// playback waited (that time over the mean frame duration, rounded).
    public var framesDue = 0
    /// Times a frame was due and not decoded yet, and the seconds playback waited in all.
    public var stalls = 0
    public var stallSeconds = 0.0
    /// Seconds of media shown (at the session's speed).
    public var shownSeconds = 0.0

    /// `framesOnTime / framesDue` (1 when nothing was due).
    public var onTimeRatio: Double { framesDue == 0 ? 1 : Double(framesOnTime) / Double(framesDue) }
}

/// A running ``FeedPlayer/play(speed:sink:)``.
public final class PlaybackSession: Sendable {
    private let flags = Locked<(stopped: Bool, done: Bool, stats: PlaybackStatistics)>((false, false, .init()))
    private let doneSignal = DispatchSemaphore(value: 0)

    init() {}

    /// Stops playback; the sink gets no further frame after ``wait(timeout:)`` returns.
    public func stop() { flags.withLock { $0.stopped = true } }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { flags.withLock { $0.stopped } }

    /// Frames handed to the sink so far.
    public var framesPlayed: Int { flags.withLock { $0.stats.framesShown } }

    /// What was played so far: frames shown, on time and due; stalls and the time waited.
    public var statistics: PlaybackStatistics {
        flags.withLock { flags in
            var s = flags.stats
            let meanDuration = s.framesShown > 0 ? s.shownSeconds / Double(s.framesShown) : 0
            let missed = meanDuration > 0 ? Int((s.stallSeconds / meanDuration).rounded()) : 0
            s.framesDue = s.framesShown + missed
            return s
        }
    }

    /// Blocks until playback has ended (stopped or swiped away) or `timeout` passes; returns whether it ended.
    @discardableResult
    public func wait(timeout: Double) -> Bool {
        if flags.withLock({ $0.done }) { return true }
        guard doneSignal.wait(timeout: .now() + timeout) == .success else { return false }
        doneSignal.signal()
        return true
    }

    func played(duration: Double, late: Bool) {
        flags.withLock {
            $0.stats.framesShown += 1
            $0.stats.shownSeconds += duration
            if !late { $0.stats.framesOnTime += 1 }
        }
    }

    func stallBegan() { flags.withLock { $0.stats.stalls += 1 } }

    func stalled(seconds: Double) { flags.withLock { $0.stats.stallSeconds += seconds } }

    func finished() {
        flags.withLock { $0.done = true }
        doneSignal.signal()
    }
}
