import Prefetch

/// The viewer half: FeedPlayer's moves and metrics, and its headless playback, driven by the session.
extension SimulationEngine {
    /// One step of the session: the viewer moves as FeedPlayer moves (``FeedPosition``).
    mutating func swipe(_ step: Int) {
        let action = scenario.session.steps[step].action
        let (target, isSwipe) = position.move(action, at: now)
        if isSwipe {
            metrics.swipes += 1
            generation += 1
            endPlayback()
        }
        applyPosition()
        let hit = machine.position(of: target).map { machine.slots[$0].hasFirstFrame } ?? false
        if isSwipe && scenario.recordsSwipes {
            outcomes.append(SwipeOutcome(swipe: metrics.swipes, step: step + 1, action: action.description,
                                         index: target, hit: hit, timeToFirstFrameMs: hit ? 0 : nil, time: now))
        }
        if hit {
            if isSwipe {
                metrics.hits += 1
                countShownFirst(target)
                ttff.append(0)
                startPlayback()
            }
            watch(after: step)
        } else {
            if isSwipe { metrics.misses += 1 }
            pendingFirst = (target, now, isSwipe, step)
        }
        pump()  // "new work starts after a swipe's call has returned": at the same virtual instant
    }

    /// The current item's first frame arrived (PrefetchScheduler's `.reached(.firstFrame)` event).
    mutating func firstFrameArrived(_ index: Int) {
        guard let pending = pendingFirst, pending.index == index, index == current else { return }
        pendingFirst = nil
        if pending.isSwipe {
            ttff.append((now - pending.since) * 1000)
            if scenario.recordsSwipes { outcomes[outcomes.count - 1].timeToFirstFrameMs = ttff[ttff.count - 1] }
            countShownFirst(index)
        }
        startPlayback()
        watch(after: pending.step)
    }

    private mutating func countShownFirst(_ index: Int) {
        metrics.framesShown += 1
        shownBytes += table.frameBytes[index]
    }

    /// The viewer watches the item now on screen, then takes the next step (or ends the session).
    private mutating func watch(after step: Int) {
        let session = scenario.session
        let watch = step < 0 ? session.initialWatch : session.steps[step].watch
        if step + 1 < session.steps.count {
            events.push(.swipe(step + 1), at: now + watch)
        } else {
            events.push(.end, at: now + watch)
        }
    }

    // MARK: - Playback (FeedPlayer.runPlayback at speed 1)

    /// A swipe (or the end of the session) stops playback; a stall still going on counts until now.
    mutating func endPlayback() {
        if let since = stalledSince { metrics.stallSeconds += now - since }
        playing = false
        stalledSince = nil
    }

    /// The first frame is on screen now; the next frame falls due one frame later.
    mutating func startPlayback() {
        playing = true
        stalledSince = nil
        origin = now
        elapsed = machine.position(of: current) == nil ? 0 : table.frameDuration[current]
        events.push(.playbackTick(generation: generation), at: origin + elapsed)
    }

    /// A playback frame of the current item falls due (or a late one arrived during a stall).
    mutating func playbackTick() {
        guard let p = machine.position(of: current) else { return beginStall() }
        let frameBytes = table.frameBytes[current], frameDuration = table.frameDuration[current]
        if fastForward && stalledSince == nil { fastForwardPlayback(p) }
        guard takeBufferedFrame(current) else { return beginStall() }
        if let since = stalledSince {
            origin += now - since
            metrics.stallSeconds += now - since
            stalledSince = nil
        }
        metrics.framesShown += 1
        shownBytes += frameBytes
        elapsed += frameDuration
        events.push(.playbackTick(generation: generation), at: origin + elapsed)
    }

    private mutating func beginStall() {
        guard stalledSince == nil else { return }
        stalledSince = now
        metrics.stalls += 1
    }

    /// A buffered frame arrived; a stalled playback takes it now.
    mutating func bufferedFrameArrived(_ index: Int) {
        if playing, stalledSince != nil, index == current {
            events.push(.playbackTick(generation: generation), at: now)
        }
    }

    /// Steady playback, skipped exactly. When the current item's buffer is full, nothing else is queued or running
    /// and no other slot needs work, each frame period repeats the same cycle: playback takes a frame, the refill job
    /// starts alone on the lane kept for the current item, decodes one frame with a whole core in `frameSeconds`
    /// (shorter than the period), delivers it, is done. The state after a period equals the state before, except
    /// counters and the decoder's position. So periods that end before the next event are applied as counter
    /// increments — the same arithmetic the step-by-step path does, in the same order — and the tick of the first
    /// period that does not fit is simulated normally. A test checks that results are identical with and without.
    private mutating func fastForwardPlayback(_ p: Int) {
        guard machine.slots[p].hasFirstFrame, machine.slots[p].job == .none,
              case .buffered(let target)? = machine.slots[p].wanted?.stage,
              machine.slots[p].stage == .buffered(seconds: target), machine.slots[p].bufferedFrames > 0,
              let handle = handles[current], handle.decoderOpen, !handle.loopHeld else { return }
        let frameSeconds = table.frameSeconds[current]
        let frameDuration = table.frameDuration[current], frameBytes = table.frameBytes[current]
        guard frameSeconds < frameDuration, machine.isIdle else { return }
        // Nothing is queued or running, and the period's events (playback taking a frame, the refill's job) schedule
        // only the current item: a slot that needs frames would be queued, so none may; one that only needs its
        // decoder positioned and is not queued (a slot whose frames the budget evicted waits for the next swipe)
        // stays as it is through the periods, as it would step by step.
        for v in machine.slots.indices where machine.needsFrames(at: v) { return }
        // Taking one frame must make the slot need exactly the one frame that refills it.
        let short = table.seconds(machine.slots[p].bufferedFrames - 1, of: current)
        guard short < target else { return }
        let bufferedAtStart = short
        guard PrefetchRules.jobNeedsMore(target: .buffered(seconds: target), hadFirstFrame: true,
                                         bufferedAtStart: bufferedAtStart, delivered: 1,
                                         deliveredSeconds: frameDuration, stopped: false) == false else { return }
        let limit = events.nextTime ?? .infinity
        let perLoop = table.framesPerLoop[current]
        let downloadedFrames = scenario.network == nil ? Int.max
            : Int((handle.downloadedSeconds * table.frameRate[current] + 1e-9).rounded(.down))
        // This tick's period: take at `now`, refill done at now + frameSeconds; the next tick at origin + elapsed + d.
        // Counted in locals, written back once.
        var position = handle.frameInLoop
        var periods = 0
        var elapsed = self.elapsed
        var now = self.now
        while position >= 1, position + 1 < perLoop, position + 1 <= downloadedFrames {
            // Summed as `playbackTick` sums it (elapsed first): `origin + elapsed + frameDuration` can round below a
            // swipe at the very time the step-by-step tick lands on.
            let nextTick = origin + (elapsed + frameDuration)
            guard nextTick < limit, now + frameSeconds < limit else { break }
            // The period, as the step-by-step path would count it.
            periods += 1
            position += 1
            elapsed += frameDuration
            now = origin + elapsed
        }
        guard periods > 0 else { return }
        machine.countSteadyPlayback(periods: periods)
        framesDecoded += periods
        decodedBytesTotal += periods * frameBytes
        metrics.framesShown += periods
        shownBytes += periods * frameBytes
        handles[current]!.frameInLoop = position
        self.elapsed = elapsed
        self.now = now
    }
}
