import Prefetch

/// One item's prefetch state in the simulation, the fields of PrefetchScheduler's slot. All frames of an item have
/// the same size and duration, so the buffer is a count. A value, kept in the engine's ``SlotTable``.
struct SimSlot {
    let index: Int
    let frameBytes: Int
    let frameDuration: Double
    var wanted: PrefetchRequest?
    var stage: PrefetchStage?
    var hasFirst = false
    var firstBytes = 0
    var bufferCount = 0
    /// The open container and decoder between jobs (a running job holds it meanwhile).
    var handle: SimHandle?
    var job = JobState.none
    var starved = false

    /// Seconds of the buffered frames (see ``ItemTable/seconds(_:of:)``), kept up to date by the engine.
    var bufferedSeconds = 0.0

    init(index: Int, frameBytes: Int, frameDuration: Double) {
        self.index = index
        self.frameBytes = frameBytes
        self.frameDuration = frameDuration
    }

    /// The slot's job: none, queued (nothing to remember yet), or running on a lane, where its state lives.
    enum JobState: Equatable {
        case none
        case queued
        case running(lane: Int)
    }

    /// The lane of the slot's running job, if one runs.
    var runningLane: Int? {
        if case .running(let lane) = job { return lane }
        return nil
    }
}

/// An item's open container and decoder between jobs, and where its decoding and downloading stand.
struct SimHandle {
    var decoderOpen = false
    var frameInLoop = 0
    var downloadedSeconds = 0.0
}

/// One running job, kept in the engine's lane it runs on: its scheduler-side flags, its progress as PrefetchJob
/// counts it, and the step it is in.
struct SimJob {
    enum Phase { case connect, probeDownload, open, decoderOpen, chunkWait, chunkDownload, frame, done }
    enum Kind { case cpu, download, wait }

    let index: Int
    let lane: Int
    var cancelled = false
    var stopped = false
    var target: PrefetchStage = .probed
    var hadFirst = false
    var bufferedAtStart = 0.0
    var delivered = 0
    var deliveredSeconds = 0.0
    var handle = SimHandle()
    var phase: Phase = .done
    var remaining = 0.0
    var rate = 0.0

    init(index: Int, lane: Int) {
        self.index = index
        self.lane = lane
    }

    var kind: Kind {
        switch phase {
        case .open, .decoderOpen, .frame: .cpu
        case .probeDownload, .chunkDownload: .download
        case .connect, .chunkWait, .done: .wait
        }
    }
}

/// Counters as PrefetchScheduler keeps them, plus what only the simulation sees.
struct SimCounters {
    var jobsStarted = 0
    var cancelledBeforeStart = 0
    var cancelledWhileRunning = 0
    var merged = 0
    var framesDelivered = 0
    var framesDropped = 0
    var framesDecoded = 0
    var decodedBytes = 0
    var peakDecodedBytes = 0
}

/// The scheduler half of the simulation: PrefetchScheduler's control-queue logic, step for step, in virtual time.
/// Every decision goes through ``PrefetchRules``, the same value the live scheduler calls; the policy is the Prefetch
/// module's own value. What differs is only the substrate: slots are plain values on one thread, jobs are step
/// machines charged virtual time instead of closures on worker threads.
///
/// Slots are addressed by their position in ``SlotTable`` (`p`), which stays valid until a slot is removed: only
/// `release` and `finish` remove one, and callers look positions up again after calling them.
extension SimulationEngine {
    @inline(__always)
    func needsWork(_ s: SimSlot) -> Bool {
        PrefetchRules.needsWork(wanted: s.wanted?.stage, reached: s.stage, hasFirstFrame: s.hasFirst,
                                bufferedSeconds: s.bufferedSeconds, failed: false, starved: s.starved)
    }

    /// PrefetchScheduler.apply: the policy's wanted set for the new current item.
    mutating func apply(current newCurrent: Int) {
        let changed = newCurrent != current
        current = newCurrent
        let context = PrefetchContext(current: current, feedLength: rules.feedLength, wraps: rules.wraps,
                                      history: history, now: now)
        let wanted = policy.wanted(in: context)
        for index in slots.keys.sorted() where !wanted.contains(where: { $0.index == index }) { release(index) }
        for request in wanted {
            let p = slots.position(request.index) ?? slots.add(
                SimSlot(index: request.index, frameBytes: table.frameBytes[request.index],
                        frameDuration: table.frameDuration[request.index]))
            slots.values[p].wanted = request
            if changed { slots.values[p].starved = false }
            if !rules.keepsHandle(request.index, current: current) { slots.values[p].handle = nil }
            trimToTarget(p)
            schedule(p)
        }
    }

    mutating func schedule(_ p: Int) {
        if slots.values[p].job != .none {
            if needsWork(slots.values[p]) { tally.merged += 1 }
            return
        }
        guard needsWork(slots.values[p]) else { return }
        slots.values[p].job = .queued
        queuedJobs += 1
    }

    mutating func trimToTarget(_ p: Int) {
        guard let wanted = slots.values[p].wanted else { return }
        if let lane = slots.values[p].runningLane, !needsWork(slots.values[p]) { lanes[lane]!.stopped = true }
        switch wanted.stage {
        case .probed: drop(p, firstToo: true)
        case .firstFrame: drop(p, firstToo: false)
        case .buffered(let seconds):
            let s = slots.values[p]
            guard s.bufferCount > 0 else { return }
            let n = PrefetchRules.framesOverTarget(repeatElement(s.frameDuration, count: s.bufferCount), target: seconds)
            setBuffer(p, s.bufferCount - n)
            tally.decodedBytes -= n * s.frameBytes
            tally.framesDropped += n
        }
    }

    /// Releases item `index`'s slot (it has one); removes it unless its cancelled job still runs.
    mutating func release(_ index: Int) {
        let p = slots.position(index)!
        if slots.values[p].wanted == nil { return }
        slots.values[p].wanted = nil
        switch slots.values[p].job {
        case .running(let lane):
            tally.cancelledWhileRunning += 1
            cancel(lane)
        case .queued:
            tally.cancelledBeforeStart += 1
            slots.values[p].job = .none
            queuedJobs -= 1
        case .none:
            break
        }
        drop(p, firstToo: true)
        slots.values[p].handle = nil
        if slots.values[p].job == .none { slots.remove(index) }
    }

    mutating func drop(_ p: Int, firstToo: Bool) {
        let s = slots.values[p]
        tally.decodedBytes -= s.bufferCount * s.frameBytes
        tally.framesDropped += s.bufferCount
        setBuffer(p, 0)
        if firstToo, s.hasFirst {
            tally.decodedBytes -= s.firstBytes
            tally.framesDropped += 1
            slots.values[p].hasFirst = false
            slots.values[p].firstBytes = 0
            if let stage = s.stage, stage > .probed { slots.values[p].stage = .probed }
        }
    }

    /// PrefetchScheduler.pump: starts what ``PrefetchRules/jobsToStart(current:queued:laneBusy:)`` picks.
    mutating func pump() {
        // Nothing can start without a free lane or a queued job (which job goes where is the rules' decision).
        guard queuedJobs > 0, runningJobs < lanes.count else { return }
        queuedScratch.removeAll(keepingCapacity: true)
        for i in slots.values.indices where slots.values[i].job == .queued {
            queuedScratch.append(.init(index: slots.values[i].index, priority: slots.values[i].wanted?.priority ?? 0))
        }
        var currentState: PrefetchRules.CurrentState?
        if let p = slots.position(current) {
            let job = slots.values[p].job
            currentState = PrefetchRules.CurrentState(index: current, hasFirstFrame: slots.values[p].hasFirst,
                                                      jobQueued: job == .queued, jobRunning: job != .none && job != .queued)
        }
        for (index, lane) in rules.jobsToStart(current: currentState, queued: queuedScratch, laneBusy: laneBusy) {
            guard let p = slots.position(index), slots.values[p].job == .queued,
                  let wanted = slots.values[p].wanted else { continue }
            slots.values[p].job = .running(lane: lane)
            queuedJobs -= 1
            lanes[lane] = SimJob(index: index, lane: lane)
            laneBusy[lane] = true
            runningJobs += 1
            tally.jobsStarted += 1
            start(p, lane: lane, target: wanted.stage)
        }
    }

    /// PrefetchScheduler.deliver: a decoded frame from the job on `lane` reaches the control queue.
    mutating func deliver(to index: Int, lane: Int) {
        tally.framesDecoded += 1
        let bytes = table.frameBytes[index]
        guard let p = slots.position(index), slots.values[p].job == .running(lane: lane),
              slots.values[p].wanted != nil, needsWork(slots.values[p]) else {
            tally.framesDropped += 1
            return
        }
        if !rules.fits(bytes, held: tally.decodedBytes) {
            evict(toFit: bytes, for: p, incomingIsFirst: !slots.values[p].hasFirst)
        }
        guard rules.fits(bytes, held: tally.decodedBytes) else {
            tally.framesDropped += 1
            slots.values[p].starved = true
            lanes[lane]!.stopped = true
            return
        }
        tally.decodedBytes += bytes
        tally.peakDecodedBytes = max(tally.peakDecodedBytes, tally.decodedBytes)
        tally.framesDelivered += 1
        if !slots.values[p].hasFirst {
            slots.values[p].hasFirst = true
            slots.values[p].firstBytes = bytes
            slots.values[p].stage = .firstFrame
            firstFrameArrived(index)
            if index == current { pump() }
        } else {
            setBuffer(p, slots.values[p].bufferCount + 1)
            let s = slots.values[p]
            if case .buffered(let target)? = s.wanted?.stage, s.bufferedSeconds >= target,
               s.stage.map({ $0 < .buffered(seconds: target) }) ?? true {
                slots.values[p].stage = .buffered(seconds: target)
            }
            bufferedFrameArrived(index)
        }
        // Nothing above removes a slot, so `p` still holds.
        if !needsWork(slots.values[p]) { lanes[lane]!.stopped = true }
    }

    /// PrefetchScheduler.evict, in the order the rules give. (When no other slot holds a frame there is nothing to
    /// order: the rules are not asked, which changes nothing but time.)
    mutating func evict(toFit bytes: Int, for p: Int, incomingIsFirst: Bool) {
        let index = slots.values[p].index
        var othersHold = false
        for v in slots.values.indices where v != p && (slots.values[v].bufferCount > 0 || slots.values[v].hasFirst) {
            othersHold = true
            break
        }
        guard othersHold else { return }
        // The order depends only on these four values; deliveries in a row usually ask the same question. Kept as
        // positions, which hold while the set of slots (its version) is the same.
        let key = EvictionKey(index: index, incomingIsFirst: incomingIsFirst, current: current,
                              slotsVersion: slots.version)
        if evictionKey != key {
            let order = rules.evictionOrder(for: index, incomingIsFirst: incomingIsFirst, current: current,
                                            others: slots.keys)
            evictionBuffered = order.buffered.compactMap { slots.position($0) }
            evictionFirst = order.first.compactMap { slots.position($0) }
            evictionKey = key
        }
        for v in evictionBuffered {
            while !rules.fits(bytes, held: tally.decodedBytes), slots.values[v].bufferCount > 0 {
                setBuffer(v, slots.values[v].bufferCount - 1)
                tally.decodedBytes -= slots.values[v].frameBytes
                noteEvicted(v)
            }
        }
        for v in evictionFirst {
            guard !rules.fits(bytes, held: tally.decodedBytes), slots.values[v].hasFirst else { continue }
            tally.decodedBytes -= slots.values[v].firstBytes
            noteEvicted(v)
            slots.values[v].hasFirst = false
            slots.values[v].firstBytes = 0
            slots.values[v].stage = .probed
        }
    }

    private mutating func noteEvicted(_ v: Int) {
        tally.framesDropped += 1
        slots.values[v].starved = true
        if let lane = slots.values[v].runningLane { cancel(lane) }
    }

    /// PrefetchScheduler.finish: the job on `lane` returned.
    mutating func finish(lane: Int) {
        let job = lanes[lane]!
        lanes[lane] = nil
        laneBusy[lane] = false
        runningJobs -= 1
        ratesDirty = true
        if let p = slots.position(job.index), slots.values[p].job == .running(lane: lane) {
            slots.values[p].job = .none
            if slots.values[p].wanted != nil && !job.cancelled { slots.values[p].handle = job.handle }
            if !rules.keepsHandle(job.index, current: current) { slots.values[p].handle = nil }
            if slots.values[p].wanted == nil {
                drop(p, firstToo: true)
                slots.values[p].handle = nil
                slots.remove(job.index)
            } else {
                schedule(p)
            }
        }
        pump()
    }

    mutating func setBuffer(_ p: Int, _ count: Int) {
        let seconds = table.seconds(count, of: slots.values[p].index)
        slots.values.withUnsafeMutableBufferPointer { slots in
            slots[p].bufferCount = count
            slots[p].bufferedSeconds = seconds
        }
    }

    /// PrefetchScheduler.takeBufferedFrame: playback takes the next buffered frame of the current item.
    mutating func takeBufferedFrame(_ index: Int) -> Bool {
        guard let p = slots.position(index), slots.values[p].bufferCount > 0 else { return false }
        setBuffer(p, slots.values[p].bufferCount - 1)
        tally.decodedBytes -= slots.values[p].frameBytes
        schedule(p)
        pump()
        return true
    }
}

/// What ``PrefetchRules/evictionOrder(for:incomingIsFirst:current:others:)`` was last asked (the set of slots by its
/// version); the answer is kept as the slots' positions, which stay the same while the version does.
struct EvictionKey: Equatable {
    var index: Int
    var incomingIsFirst: Bool
    var current: Int
    var slotsVersion: Int
}
