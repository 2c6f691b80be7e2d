/// The events a driver calls: each forgets the last one's actions and events, changes the state and says what to do.
extension PrefetchStateMachine {
    // MARK: - Events

    /// Sets the number of items and whether the feed wraps (a feed that grew by paging, and wraps once its end is
    /// known). Takes effect at the next ``apply(current:history:now:)``; slots already held are not disturbed.
    public mutating func setFeed(length: Int, wraps: Bool) {
        rules.feedLength = length
        rules.wraps = wraps
    }

    /// The viewer is on `current`: cancels and releases what left the policy's wanted set, queues or retargets the
    /// rest. Starts nothing (call ``pump()`` after: a swipe's caller gets its answer before any worker wakes up).
    /// Returns the wanted set.
    @discardableResult
    public mutating func apply(current newCurrent: Int, history: [Swipe], now: Double) -> [PrefetchRequest] {
        beginEvent()
        let changed = newCurrent != current
        let previous = current
        current = newCurrent
        let context = PrefetchContext(current: current, feedLength: rules.feedLength, wraps: rules.wraps,
                                      history: history, now: now)
        let wanted = policy.wanted(in: context)
        for index in slotKeys.sorted() where !wanted.contains(where: { $0.index == index }) { release(index) }
        // The item left behind keeps its first frame but not the frames after the point its playback reached: if it
        // becomes current again it plays from its start.
        if changed, let p = position(of: previous), slots[p].wanted != nil, slots[p].bufferedFrames > 0 {
            drop(p, firstToo: false)
        }
        for request in wanted {
            let p = position(of: request.index) ?? add(Slot(index: request.index))
            slots[p].wanted = request
            if changed {
                slots[p].starved = false
                // Memory was released or the priorities changed: whoever waited for room asks again.
                slots[p].waitingForRoom = false
            }
            if !rules.keepsHandle(request.index, current: current) { releaseHandle(p) }
            trimToTarget(p)
            schedule(p)
        }
        return wanted
    }

    /// Starts queued jobs on free lanes as ``PrefetchRules/jobsToStart(current:queued:laneBusy:)`` decides.
    public mutating func pump() {
        beginEvent()
        pumpJobs()
    }

    mutating func pumpJobs() {
        moveCurrentToItsLane()
        guard queuedJobs > 0, runningJobs < lanes.count else { return }
        queuedScratch.removeAll(keepingCapacity: true)
        for i in slots.indices where slots[i].job == .queued {
            let kind: PrefetchRules.Queued.Kind = !slots[i].hasFirstFrame ? .firstFrame
                : needsFrames(at: i) ? .frames : .decoder
            queuedScratch.append(.init(index: slots[i].index, priority: slots[i].wanted?.priority ?? 0, kind: kind))
        }
        var currentState: PrefetchRules.CurrentState?
        if let p = position(of: current) {
            let job = slots[p].job
            let dry = PrefetchRules.runsDry(wanted: slots[p].wanted?.stage, hasFirstFrame: slots[p].hasFirstFrame,
                                            bufferedSeconds: slots[p].bufferedSeconds)
            currentState = PrefetchRules.CurrentState(index: current, hasFirstFrame: slots[p].hasFirstFrame,
                                                      jobQueued: job == .queued,
                                                      jobRunning: job != .none && job != .queued,
                                                      runningDry: dry && !slots[p].waitingForRoom)
        }
        for (index, lane) in rules.jobsToStart(current: currentState, queued: queuedScratch, laneBusy: laneBusy) {
            guard let p = position(of: index), slots[p].job == .queued, let wanted = slots[p].wanted else {
                continue
            }
            slots[p].job = .running(lane: lane)
            queuedJobs -= 1
            lanes[lane] = LaneJob(index: index)
            laneBusy[lane] = true
            runningJobs += 1
            counters.jobsStarted += 1
            slots[p].hasHandle = false  // the job takes it
            slots[p].restart = false
            if reportsEvents { events.append(.started(index: index, target: wanted.stage)) }
            actions.append(.start(JobOrder(index: index, lane: lane, target: wanted.stage,
                                           startStage: slots[p].stage,
                                           hasFirstFrame: slots[p].hasFirstFrame,
                                           bufferedSeconds: slots[p].bufferedSeconds,
                                           heldFrames: (slots[p].hasFirstFrame ? 1 : 0) + slots[p].bufferedFrames)))
        }
    }

    /// The item on screen runs on a background lane (it started there as a neighbour, or while its own lane was
    /// busy) and its own lane is free: its job stops at its next frame and goes on, with its decoder, on that lane,
    /// so that it never shares a background lane's low priority with the neighbours.
    mutating func moveCurrentToItsLane() {
        guard !laneBusy[rules.urgentLane], let p = currentPosition(), let lane = slots[p].runningLane,
              lane != rules.urgentLane, lanes[lane]?.moving == false, lanes[lane]?.cancelled == false else { return }
        lanes[lane]!.moving = true
        actions.append(.stop(lane: lane))
    }

    /// The job on `lane` reached `stage` without a frame (`.probed`).
    public mutating func reach(_ stage: PrefetchStage, index: Int, lane: Int) {
        beginEvent()
        guard let p = position(of: index, onLane: lane), slots[p].job == .running(lane: lane), slots[p].wanted != nil
        else {
            return
        }
        if let reached = slots[p].stage, stage <= reached { return }
        slots[p].stage = stage
        if reportsEvents { events.append(.reached(index: index, stage: stage)) }
    }

    /// The job on `lane` asks for room for its next frame of item `index`, `bytes` big, before decoding it
    /// (backpressure: a frame is never decoded to be refused, so a slot never skips one).
    ///
    /// The answer is ``Admission/stop`` when the item needs no more frames; ``Admission/go`` when the frame fits the
    /// budget, after evicting frames worth less by the same rule as a delivery, with its bytes reserved until it is
    /// delivered (or the job returns); ``Admission/pause`` otherwise: the slot waits for room. A buffered frame also
    /// leaves room for the first frames still wanted by other items, so a deep buffer never keeps a neighbour from
    /// its first frame — except the next frame of the item on screen when it holds none ahead of its playhead: that
    /// one is worth a first frame, so that playback always goes on, frame by frame if the budget is that small.
    public mutating func admit(bytes: Int, to index: Int, lane: Int) -> Admission {
        beginEvent()
        guard let p = position(of: index, onLane: lane), slots[p].job == .running(lane: lane), slots[p].wanted != nil,
              lanes[lane]?.cancelled == false, needsFrames(at: p) else {
            return .stop
        }
        // Playback of the item on screen must always be able to go on: when it holds no frame ahead of the playhead,
        // its next frame is worth a first frame (it may evict any other slot's frames: all are farther) and keeps
        // no room for others.
        let playheadStarves = index == current && slots[p].bufferedFrames == 0
        let incomingIsFirst = playheadStarves || !slots[p].hasFirstFrame && slots[p].reservedBytes == 0
        var needed = bytes
        if !incomingIsFirst {
            for v in slots.indices where v != p && slots[v].wanted.map({ $0.stage >= .firstFrame }) == true
                && !slots[v].hasFirstFrame && !slots[v].failed && !slots[v].starved {
                needed += bytes
            }
        }
        if !rules.fits(needed, held: counters.decodedBytes) {
            evict(toFit: needed, for: p, incomingIsFirst: incomingIsFirst)
        }
        guard rules.fits(needed, held: counters.decodedBytes) else {
            slots[p].waitingForRoom = true
            counters.admissionsPaused += 1
            return .pause
        }
        slots[p].reservedBytes += bytes
        counters.decodedBytes += bytes
        counters.peakDecodedBytes = max(counters.peakDecodedBytes, counters.decodedBytes)
        return .go
    }

    /// Gives back the bytes admitted for the slot at `p` and not delivered.
    mutating func releaseReservation(_ p: Int) {
        counters.decodedBytes -= slots[p].reservedBytes
        slots[p].reservedBytes = 0
    }

    /// The job on `lane` has decoded item `index`'s whole first pass, `frames` frames of `bytes` in all, and asks
    /// to keep it in its handle to serve later loops from instead of decoding them again. Yes when the rules'
    /// bound allows it (``PrefetchRules/holdsLoop(frames:bytes:)``) and it fits the budget as it stands, leaving room
    /// for the first frames other wanted items still lack (nothing is evicted for it); its bytes are then counted
    /// until the item's handle is released (the item moves beyond ``PrefetchRules/keepHandlesWithin``, leaves the
    /// wanted set, or its decoder position is forgotten) or not kept when the job returns. No: the job loops by
    /// decoding the item again.
    public mutating func holdLoop(frames: Int, bytes: Int, to index: Int, lane: Int) -> Bool {
        beginEvent()
        guard rules.holdsLoop(frames: frames, bytes: bytes), let p = position(of: index, onLane: lane),
              slots[p].job == .running(lane: lane), slots[p].wanted != nil, lanes[lane]?.cancelled == false,
              !slots[p].restart, slots[p].loopBytes == 0, rules.keepsHandle(index, current: current) else {
            return false
        }
        var needed = bytes
        for v in slots.indices where v != p && slots[v].wanted.map({ $0.stage >= .firstFrame }) == true
            && !slots[v].hasFirstFrame && !slots[v].failed && !slots[v].starved {
            needed += slots[p].firstBytes
        }
        guard rules.fits(needed, held: counters.decodedBytes) else { return false }
        slots[p].loopBytes = bytes
        counters.decodedBytes += bytes
        counters.peakDecodedBytes = max(counters.peakDecodedBytes, counters.decodedBytes)
        counters.loopsHeld += 1
        return true
    }

    /// The slot at `p`'s handle, and the first pass it held, are gone: its bytes leave the budget.
    mutating func releaseLoop(_ p: Int) {
        counters.decodedBytes -= slots[p].loopBytes
        slots[p].loopBytes = 0
    }

    /// The job on `lane` delivered a decoded frame of item `index`, `bytes` big and `duration` seconds long.
    ///
    /// The frame is kept if the item still needs it and it fits the budget, after evicting frames worth less
    /// (``PrefetchRules/evictionOrder(for:incomingIsFirst:current:others:)``); otherwise it is rejected and the
    /// budget starves the item. A first frame of the item on screen lets held-back work start.
    public mutating func deliver(bytes: Int, duration: Double, to index: Int, lane: Int) -> Delivery {
        beginEvent()
        guard let p = position(of: index, onLane: lane), slots[p].job == .running(lane: lane), slots[p].wanted != nil,
              needsFrames(at: p) else {
            counters.framesDropped += 1
            if let p = position(of: index, onLane: lane), slots[p].job == .running(lane: lane) {
                // The decoder moved past a frame the slot will not hold.
                releaseReservation(p)
                slots[p].restart = true
            }
            return .rejected
        }
        // An admitted frame was counted when it was admitted.
        let admitted = min(slots[p].reservedBytes, bytes)
        slots[p].reservedBytes -= admitted
        let extra = bytes - admitted
        if extra > 0, !rules.fits(extra, held: counters.decodedBytes) {
            evict(toFit: extra, for: p, incomingIsFirst: !slots[p].hasFirstFrame)
        }
        guard rules.fits(extra, held: counters.decodedBytes) else {
            counters.decodedBytes -= admitted
            counters.framesDropped += 1
            slots[p].starved = true
            slots[p].restart = true
            actions.append(.stop(lane: lane))
            return .rejected
        }
        counters.decodedBytes += extra
        counters.peakDecodedBytes = max(counters.peakDecodedBytes, counters.decodedBytes)
        counters.framesDelivered += 1
        let outcome: Delivery
        if !slots[p].hasFirstFrame {
            slots[p].hasFirstFrame = true
            slots[p].firstBytes = bytes
            slots[p].stage = .firstFrame
            if reportsEvents { events.append(.reached(index: index, stage: .firstFrame)) }
            outcome = .first
            if index == current { pumpJobs() }  // other work was held back for it
        } else {
            let wasDry = index == current && PrefetchRules.runsDry(wanted: slots[p].wanted?.stage, hasFirstFrame: true,
                                                                   bufferedSeconds: slots[p].bufferedSeconds)
            appendFrame(BufferedFrame(bytes: bytes, duration: duration), at: p)
            outcome = .buffered
            // Playback of the item on screen is safe again: the work held back for it may start.
            if wasDry, !PrefetchRules.runsDry(wanted: slots[p].wanted?.stage, hasFirstFrame: true,
                                             bufferedSeconds: slots[p].bufferedSeconds) {
                pumpJobs()
            }
            if case .buffered(let target)? = slots[p].wanted?.stage, slots[p].bufferedSeconds >= target,
               slots[p].stage.map({ $0 < .buffered(seconds: target) }) ?? true {
                slots[p].stage = .buffered(seconds: target)
                if reportsEvents { events.append(.reached(index: index, stage: .buffered(seconds: target))) }
            }
        }
        // Nothing above removes a slot, so `p` still holds.
        if !needsFrames(at: p) { actions.append(.stop(lane: lane)) }
        return outcome
    }

    /// The job on `lane` returned. Returns whether the driver keeps the decoder the job handed back (the item is
    /// still wanted, near enough, and the job was not cancelled: an interrupted decoder is never reused).
    public mutating func finish(lane: Int, result: JobResult) -> Bool {
        beginEvent()
        guard let job = lanes[lane] else { return false }
        let position = position(of: job.index, onLane: lane)
        lanes[lane] = nil
        laneBusy[lane] = false
        runningJobs -= 1
        var keep = false
        if let p = position, slots[p].job == .running(lane: lane) {
            slots[p].job = .none
            releaseReservation(p)
            switch result {
            case .completed(let handle):
                keep = handle && slots[p].wanted != nil && !job.cancelled && !slots[p].restart
                    && rules.keepsHandle(job.index, current: current)
                if !handle && !job.cancelled { slots[p].decoderless = true }
                slots[p].hasHandle = keep
            case .failed(let message):
                if !job.cancelled {
                    slots[p].failed = true
                    failures[job.index] = message
                    counters.failures += 1
                    if reportsEvents { events.append(.failed(index: job.index, message: message)) }
                }
            case .cancelled:
                break
            }
            // A handle not kept is freed by the driver, with the first pass it held.
            if !keep { releaseLoop(p) }
            if slots[p].wanted == nil {
                drop(p, firstToo: true)
                releaseHandle(p)
                remove(job.index)
            } else {
                schedule(p)
            }
        }
        pumpJobs()
        return keep
    }

    /// Playback takes the oldest buffered frame of item `index`: its bytes leave the budget and a top-up is queued
    /// and started. Returns false when none is buffered (the driver then has nothing to take).
    public mutating func takeBufferedFrame(_ index: Int) -> Bool {
        beginEvent()
        guard let p = index == current ? currentPosition() : position(of: index), slots[p].bufferedFrames > 0 else {
            return false
        }
        let taken = takeOldestFrame(at: p)
        counters.decodedBytes -= taken.bytes
        // The frame taken made room: the item on screen asks again if it was waiting.
        slots[p].waitingForRoom = false
        schedule(p)
        pumpJobs()
        return true
    }

    /// Counts `periods` periods of steady playback that a driver applied analytically (PolicyLab skips them when
    /// nothing else can happen meanwhile): in each, playback took the current item's oldest buffered frame and a
    /// refill job started, delivered one frame of the same size and duration, and returned. The state after a period
    /// equals the state before, so only the counters move.
    public mutating func countSteadyPlayback(periods: Int) {
        counters.jobsStarted += periods
        counters.framesDelivered += periods
    }

    /// Cancels every job and releases every slot.
    public mutating func shutdown() {
        beginEvent()
        for index in slotKeys.sorted() { release(index) }
        pumpJobs()
    }
}
