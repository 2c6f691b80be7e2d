import Prefetch

/// One item's prefetch state in the simulation, the fields of PrefetchScheduler's slot. All frames of an item have
/// the same size and duration, so the buffer is a count.
final class SimSlot {
    let index: Int
    let frameBytes: Int
    let frameDuration: Double
    var wanted: PrefetchRequest?
    var stage: PrefetchStage?
    var hasFirst = false
    var firstBytes = 0
    var bufferCount = 0
    var handle: SimHandle?
    var job: SimJob?
    var starved = false

    /// Seconds of the buffered frames (see ``ItemTable/seconds(_:of:)``), kept up to date by the engine.
    var bufferedSeconds = 0.0

    init(index: Int, frameBytes: Int, frameDuration: Double) {
        self.index = index
        self.frameBytes = frameBytes
        self.frameDuration = frameDuration
    }
}

/// An item's open container and decoder between jobs, and where its decoding and downloading stand.
final class SimHandle {
    var decoderOpen = false
    var frameInLoop = 0
    var downloadedSeconds = 0.0
}

/// One job: its scheduler-side flags, its progress as PrefetchJob counts it, and the step it is in.
final class SimJob {
    enum Phase { case connect, probeDownload, open, decoderOpen, chunkWait, chunkDownload, frame, done }
    enum Kind { case cpu, download, wait }

    let index: Int
    var running = false
    var lane = -1
    var cancelled = false
    var stopped = false
    var target: PrefetchStage = .probed
    var hadFirst = false
    var bufferedAtStart = 0.0
    var delivered = 0
    var deliveredSeconds = 0.0
    var handle: SimHandle?
    var phase: Phase = .done
    var remaining = 0.0
    var rate = 0.0

    init(index: Int) { self.index = index }

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
/// module's own value. What differs is only the substrate: slots are plain objects on one thread, jobs are step
/// machines charged virtual time instead of closures on worker threads.
extension SimulationEngine {
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
        let byIndex = Dictionary(wanted.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        for index in slots.keys.sorted() where byIndex[index] == nil { release(slots[index]!) }
        for request in wanted {
            let slot = slots[request.index] ?? makeSlot(request.index)
            slot.wanted = request
            if changed { slot.starved = false }
            if !rules.keepsHandle(request.index, current: current) { slot.handle = nil }
            trimToTarget(slot)
            schedule(slot)
        }
    }

    private mutating func makeSlot(_ index: Int) -> SimSlot {
        let slot = SimSlot(index: index, frameBytes: table.frameBytes[index], frameDuration: table.frameDuration[index])
        slots[index] = slot
        return slot
    }

    mutating func schedule(_ s: SimSlot) {
        if s.job != nil {
            if needsWork(s) { tally.merged += 1 }
            return
        }
        guard needsWork(s) else { return }
        s.job = SimJob(index: s.index)
    }

    mutating func trimToTarget(_ s: SimSlot) {
        guard let wanted = s.wanted else { return }
        if let job = s.job, job.running, !needsWork(s) { job.stopped = true }
        switch wanted.stage {
        case .probed: drop(s, firstToo: true)
        case .firstFrame: drop(s, firstToo: false)
        case .buffered(let seconds):
            guard s.bufferCount > 0 else { return }
            let n = PrefetchRules.framesOverTarget(repeatElement(s.frameDuration, count: s.bufferCount), target: seconds)
            setBuffer(s, s.bufferCount - n)
            tally.decodedBytes -= n * s.frameBytes
            tally.framesDropped += n
        }
    }

    mutating func release(_ s: SimSlot) {
        if s.wanted == nil { return }
        s.wanted = nil
        if let job = s.job {
            if job.running {
                tally.cancelledWhileRunning += 1
                cancel(job)
            } else {
                tally.cancelledBeforeStart += 1
                s.job = nil
            }
        }
        drop(s, firstToo: true)
        s.handle = nil
        if s.job == nil { slots[s.index] = nil }
    }

    mutating func drop(_ s: SimSlot, firstToo: Bool) {
        tally.decodedBytes -= s.bufferCount * s.frameBytes
        tally.framesDropped += s.bufferCount
        setBuffer(s, 0)
        if firstToo, s.hasFirst {
            tally.decodedBytes -= s.firstBytes
            tally.framesDropped += 1
            s.hasFirst = false
            s.firstBytes = 0
            if let stage = s.stage, stage > .probed { s.stage = .probed }
        }
    }

    /// PrefetchScheduler.pump: starts what ``PrefetchRules/jobsToStart(current:queued:laneBusy:)`` picks.
    mutating func pump() {
        // Nothing can start without a free lane or a queued job (which job goes where is the rules' decision).
        guard lanes.contains(where: { $0 == nil }),
              slots.values.contains(where: { $0.job.map { !$0.running } ?? false }) else { return }
        var queued: [PrefetchRules.Queued] = []
        for s in slots.values {
            if let job = s.job, !job.running { queued.append(.init(index: s.index, priority: s.wanted?.priority ?? 0)) }
        }
        let currentState = slots[current].map {
            PrefetchRules.CurrentState(index: $0.index, hasFirstFrame: $0.hasFirst,
                                       jobQueued: $0.job.map { !$0.running } ?? false,
                                       jobRunning: $0.job?.running ?? false)
        }
        let busy = lanes.map { $0 != nil }
        for (index, lane) in rules.jobsToStart(current: currentState, queued: queued, laneBusy: busy) {
            guard let s = slots[index], let job = s.job, let wanted = s.wanted else { continue }
            job.running = true
            job.lane = lane
            lanes[lane] = job
            tally.jobsStarted += 1
            start(s, job: job, target: wanted.stage)
        }
    }

    /// PrefetchScheduler.deliver: a decoded frame reaches the control queue.
    mutating func deliver(to index: Int, job: SimJob) {
        tally.framesDecoded += 1
        let bytes = table.frameBytes[index]
        guard let s = slots[index], s.job === job, s.wanted != nil, needsWork(s) else {
            tally.framesDropped += 1
            return
        }
        if !rules.fits(bytes, held: tally.decodedBytes) { evict(toFit: bytes, for: s, incomingIsFirst: !s.hasFirst) }
        guard rules.fits(bytes, held: tally.decodedBytes) else {
            tally.framesDropped += 1
            s.starved = true
            job.stopped = true
            return
        }
        tally.decodedBytes += bytes
        tally.peakDecodedBytes = max(tally.peakDecodedBytes, tally.decodedBytes)
        tally.framesDelivered += 1
        if !s.hasFirst {
            s.hasFirst = true
            s.firstBytes = bytes
            s.stage = .firstFrame
            firstFrameArrived(index)
            if index == current { pump() }
        } else {
            setBuffer(s, s.bufferCount + 1)
            if case .buffered(let target)? = s.wanted?.stage, s.bufferedSeconds >= target,
               s.stage.map({ $0 < .buffered(seconds: target) }) ?? true {
                s.stage = .buffered(seconds: target)
            }
            bufferedFrameArrived(index)
        }
        if !needsWork(s) { job.stopped = true }
    }

    /// PrefetchScheduler.evict, in the order the rules give. (When no other slot holds a frame there is nothing to
    /// order: the rules are not asked, which changes nothing but time.)
    mutating func evict(toFit bytes: Int, for s: SimSlot, incomingIsFirst: Bool) {
        guard slots.values.contains(where: { $0 !== s && ($0.bufferCount > 0 || $0.hasFirst) }) else { return }
        // The order depends only on these four values; deliveries in a row usually ask the same question.
        let key = EvictionKey(index: s.index, incomingIsFirst: incomingIsFirst, current: current,
                              slotsVersion: slots.version)
        if evictionKey != key {
            let order = rules.evictionOrder(for: s.index, incomingIsFirst: incomingIsFirst, current: current,
                                            others: slots.keys)
            evictionBuffered = order.buffered.compactMap { slots[$0] }
            evictionFirst = order.first.compactMap { slots[$0] }
            evictionKey = key
        }
        func over() -> Bool { !rules.fits(bytes, held: tally.decodedBytes) }
        func note(_ v: SimSlot) {
            tally.framesDropped += 1
            v.starved = true
            if let job = v.job, job.running { cancel(job) }
        }
        for v in evictionBuffered {
            while over(), v.bufferCount > 0 {
                setBuffer(v, v.bufferCount - 1)
                tally.decodedBytes -= v.frameBytes
                note(v)
            }
        }
        for v in evictionFirst {
            guard over(), v.hasFirst else { continue }
            tally.decodedBytes -= v.firstBytes
            note(v)
            v.hasFirst = false
            v.firstBytes = 0
            v.stage = .probed
        }
    }

    /// PrefetchScheduler.finish: a job returned.
    mutating func finish(_ job: SimJob) {
        lanes[job.lane] = nil
        ratesDirty = true
        if let s = slots[job.index], s.job === job {
            s.job = nil
            if s.wanted != nil && !job.cancelled { s.handle = job.handle }
            if !rules.keepsHandle(job.index, current: current) { s.handle = nil }
            if s.wanted == nil {
                drop(s, firstToo: true)
                s.handle = nil
                slots[job.index] = nil
            } else {
                schedule(s)
            }
        }
        pump()
    }

    mutating func setBuffer(_ s: SimSlot, _ count: Int) {
        s.bufferCount = count
        s.bufferedSeconds = table.seconds(count, of: s.index)
    }

    /// PrefetchScheduler.takeBufferedFrame: playback takes the next buffered frame of the current item.
    mutating func takeBufferedFrame(_ index: Int) -> Bool {
        guard let s = slots[index], s.bufferCount > 0 else { return false }
        setBuffer(s, s.bufferCount - 1)
        tally.decodedBytes -= s.frameBytes
        schedule(s)
        pump()
        return true
    }
}

/// What ``PrefetchRules/evictionOrder(for:incomingIsFirst:current:others:)`` was last asked (the set of slots by its
/// version); the answer is kept as the slots themselves, which stay the same objects while the version does.
struct EvictionKey: Equatable {
    var index: Int
    var incomingIsFirst: Bool
    var current: Int
    var slotsVersion: Int
}
