import Prefetch

/// The scheduler half of the simulation: the live engine's own ``PrefetchStateMachine`` (the value
/// ``PrefetchScheduler`` drives on Dispatch), driven in virtual time. The engine feeds it the same events — the viewer
/// moved, a job reached a stage, delivered a frame, returned, playback took a frame — and performs its actions on the
/// simulated substrate: a `.start` begins a step machine on a lane (``startJob(_:)``), a `.cancel` interrupts one, a
/// `.stop` ends it at its next frame, a `.releaseHandle` forgets the item's decoder. Frames are only counted, so
/// the actions that free frames, and the events, need nothing done.
extension SimulationEngine {
    /// Performs the actions of the machine's last event (once per event: the next event forgets them).
    @inline(__always)
    mutating func perform() {
        guard !machine.actions.isEmpty || !machine.events.isEmpty else { return }
        if trace != nil {
            trace!.append(contentsOf: machine.actions)
            eventTrace.append(contentsOf: machine.events)
        }
        var i = 0
        while i < machine.actions.count {
            let action = machine.actions[i]
            i += 1
            switch action {
            case .start(let order): startJob(order)
            case .cancel(let lane): cancel(lane)
            case .stop(let lane): lanes[lane]!.stopped = true
            case .releaseHandle(let index): handles[index] = nil
            case .dropFirst, .dropBuffered: break
            }
        }
    }

    /// Records every action performed from now on in ``trace``, and every event in ``eventTrace`` (a test compares
    /// them with the live scheduler's).
    mutating func recordActions() {
        machine.reportsEvents = true
        trace = []
    }

    /// The viewer is at ``position``.
    mutating func applyPosition() {
        machine.apply(current: position.current, history: position.history, now: now)
        perform()
    }

    /// Work may start.
    mutating func pump() {
        machine.pump()
        perform()
    }

    /// A decoded frame from the job on `lane` reaches the scheduler.
    mutating func deliver(to index: Int, lane: Int) {
        framesDecoded += 1
        let outcome = machine.deliver(bytes: table.frameBytes[index], duration: table.frameDuration[index], to: index,
                                      lane: lane)
        switch outcome {
        case .first: firstFrameArrived(index)
        case .buffered: bufferedFrameArrived(index)
        case .rejected: break
        }
        perform()
    }

    /// The job on `lane` returned; its decoder is kept if the machine says so.
    mutating func finish(lane: Int) {
        let job = lanes[lane]!
        lanes[lane] = nil
        ratesDirty = true
        if machine.finish(lane: lane, result: .completed(handle: true)) { handles[job.index] = job.handle }
        perform()
    }

    /// Playback takes the next buffered frame of the current item.
    mutating func takeBufferedFrame(_ index: Int) -> Bool {
        let took = machine.takeBufferedFrame(index)
        perform()
        return took
    }
}
