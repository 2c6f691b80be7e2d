import Prefetch

/// An item's open container and decoder between jobs, and where its decoding and downloading stand.
struct SimHandle {
    var decoderOpen = false
    /// Frames the item held when this decoder was opened, still to decode again undelivered before new ones.
    var toSkip = 0
    var frameInLoop = 0
    var downloadedSeconds = 0.0
    /// Where the first pass stands: 0 while it is decoded, 1 once it ended (the next frame asks to hold it), 2 after.
    var loop = 0
    /// Whether the item's whole first pass is held (MediaPreparer's `heldLoop`): later frames cost nothing.
    var loopHeld = false
}

/// The decoders kept between jobs, by item: a handful (the machine keeps them within ±1 of the current item), so a
/// linear scan beats hashing and the memory does not grow with the feed's length.
struct KeptHandles {
    private var entries: [(index: Int, handle: SimHandle)] = []

    subscript(index: Int) -> SimHandle? {
        get {
            for entry in entries where entry.index == index { return entry.handle }
            return nil
        }
        set {
            if let i = entries.firstIndex(where: { $0.index == index }) {
                if let newValue { entries[i].handle = newValue } else { entries.remove(at: i) }
            } else if let newValue {
                entries.append((index, newValue))
            }
        }
    }
}

/// One running job, kept in the engine's lane it runs on: its scheduler-side flags, its progress as PrefetchJob
/// counts it, and the step it is in.
struct SimJob {
    enum Phase { case connect, probeDownload, open, decoderOpen, chunkWait, chunkDownload, admit, frame, done }
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
        case .connect, .chunkWait, .admit, .done: .wait
        }
    }
}

/// The preparer half: FeedPlayer's MediaPreparer as a step machine charged virtual time. A job is named by the lane
/// it runs on; its state is `lanes[lane]`.
extension SimulationEngine {
    /// A `.start` action of the state machine + MediaPreparer.prepare's beginning: the job takes the item's kept
    /// decoder (if any) and picks its first step.
    mutating func startJob(_ order: PrefetchStateMachine.JobOrder) {
        let lane = order.lane
        lanes[lane] = SimJob(index: order.index, lane: lane)
        lanes[lane]!.target = order.target
        lanes[lane]!.hadFirst = order.hasFirstFrame
        lanes[lane]!.bufferedAtStart = order.bufferedSeconds
        ratesDirty = true
        if let handle = handles[order.index] {
            handles[order.index] = nil
            lanes[lane]!.handle = handle
            continueToFrames(lane)
        } else if let network = scenario.network {
            lanes[lane]!.handle.toSkip = order.heldFrames
            set(lane, .connect, 2 * network.roundTrip)
        } else {
            lanes[lane]!.handle.toSkip = order.heldFrames
            set(lane, .open, table.openSeconds[order.index])
        }
    }

    private mutating func set(_ lane: Int, _ phase: SimJob.Phase, _ work: Double) {
        // In place, with one uniqueness check for the four accesses (this runs for every step of every job).
        let dirty = lanes.withUnsafeMutableBufferPointer { lanes -> Bool in
            let before = lanes[lane]!.kind
            lanes[lane]!.phase = phase
            lanes[lane]!.remaining = work
            return lanes[lane]!.kind != before || lanes[lane]!.rate == 0
        }
        if dirty { ratesDirty = true }
    }

    /// Cancels the job on `lane`: a download or a wait is interrupted at once (FFmpeg's interrupt callback); a CPU
    /// step runs to its end, then the job returns.
    mutating func cancel(_ lane: Int) {
        lanes[lane]!.cancelled = true
        if lanes[lane]!.kind != .cpu { lanes[lane]!.remaining = 0 }
    }

    private mutating func finishSoon(_ lane: Int) { set(lane, .done, 0) }

    private mutating func continueToFrames(_ lane: Int) {
        guard lanes[lane]!.target != .probed else { return finishSoon(lane) }
        if lanes[lane]!.handle.decoderOpen {
            nextFrame(lane)
        } else {
            set(lane, .decoderOpen, table.decoderOpenSeconds[lanes[lane]!.index])
        }
    }

    /// MediaPreparer's loop: a frame after the item's first asks the budget for room first (a zero-length step,
    /// so that the machine's event runs from the main loop, never inside another event's actions).
    private mutating func nextFrame(_ lane: Int) {
        let job = lanes[lane]!
        if job.handle.toSkip == 0, job.hadFirst || job.delivered > 0, job.phase != .admit {
            return set(lane, .admit, 0)
        }
        decodeFrame(lane)
    }

    private mutating func decodeFrame(_ lane: Int) {
        let index = lanes[lane]!.index
        let handle = lanes[lane]!.handle
        // MediaPreparer at the end of the first pass: a short clip asks to keep it and, if it may, loops from it.
        if handle.loopHeld { return set(lane, .frame, 0) }
        if handle.loop == 1, handle.frameInLoop == 0, !handle.loopHeld {
            let frames = table.framesPerLoop[index]
            lanes[lane]!.handle.loop = 2  // asked once
            if frames >= 2, machine.rules.holdsLoop(frames: frames, bytes: frames * table.frameBytes[index]) {
                let held = machine.holdLoop(frames: frames, bytes: frames * table.frameBytes[index], to: index,
                                            lane: lane)
                perform()
                if held {
                    lanes[lane]!.handle.loopHeld = true
                    return set(lane, .frame, 0)
                }
            }
        }
        if let network = scenario.network {
            let duration = items.duration[index]
            let needed = min(duration, Double(handle.frameInLoop + 1) / table.frameRate[index])
            if handle.downloadedSeconds < needed - 1e-9 {
                return set(lane, .chunkWait, network.roundTrip)
            }
        }
        set(lane, .frame, handle.frameInLoop == 0 ? table.firstFrameSeconds[index] : table.frameSeconds[index])
    }

    private func chunkBytes(_ index: Int, seconds: Double) -> Double {
        let bitrate = scenario.costs.items[items.costIndex[index]].sizeBytes.map { Double($0) * 8 / items.duration[index] } ?? scenario.network!.bitrate
        return bitrate / 8 * seconds
    }

    /// The step the job on `lane` was in has finished. A job that returns is finished here at once (the main loop
    /// calls this, never `pump`, so finishing cannot recurse); a job that has nothing to do when it starts returns
    /// through a zero-length step instead.
    mutating func stepFinished(lane: Int) {
        let job = lanes[lane]!
        if job.phase == .done || job.cancelled { return finish(lane: lane) }
        let index = job.index
        switch job.phase {
        case .connect:
            set(lane, .probeDownload, Double(scenario.network!.probeBytes))
        case .probeDownload:
            set(lane, .open, table.openSeconds[index])
        case .open:
            // MediaPreparer: `job.reached(.probed)`; a job wanting only a probe is done.
            reach(.probed, index: index, lane: lane)
            let more = PrefetchRules.jobNeedsMore(target: job.target, hadFirstFrame: job.hadFirst,
                                                  bufferedAtStart: job.bufferedAtStart, delivered: job.delivered,
                                                  deliveredSeconds: job.deliveredSeconds, stopped: job.stopped)
            // A fresh decoder for an item holding frames is positioned after them before the job returns.
            if more || lanes[lane]!.handle.toSkip > 0 { continueToFrames(lane) } else { finish(lane: lane) }
        case .decoderOpen:
            lanes[lane]!.handle.decoderOpen = true
            nextFrame(lane)
        case .chunkWait:
            let remainingMedia = items.duration[index] - job.handle.downloadedSeconds
            let seconds = min(scenario.network!.chunkSeconds, max(remainingMedia, 0))
            set(lane, .chunkDownload, chunkBytes(index, seconds: seconds))
        case .admit:
            // PrefetchJob.admit: a job that has done enough (or was stopped) returns; otherwise the machine answers.
            guard PrefetchRules.jobNeedsMore(target: job.target, hadFirstFrame: job.hadFirst,
                                             bufferedAtStart: job.bufferedAtStart, delivered: job.delivered,
                                             deliveredSeconds: job.deliveredSeconds, stopped: job.stopped)
            else { return finish(lane: lane) }
            let answer = machine.admit(bytes: table.frameBytes[index], to: index, lane: lane)
            perform()
            if answer == .go && !lanes[lane]!.cancelled { decodeFrame(lane) } else { finish(lane: lane) }
        case .chunkDownload:
            lanes[lane]!.handle.downloadedSeconds = min(items.duration[index],
                                                       job.handle.downloadedSeconds + scenario.network!.chunkSeconds)
            set(lane, .frame, job.handle.frameInLoop == 0 ? table.firstFrameSeconds[index] : table.frameSeconds[index])
        case .frame:
            var frameInLoop = job.handle.frameInLoop + 1
            if frameInLoop >= table.framesPerLoop[index] {  // seek back (or replay the held pass): loop
                frameInLoop = 0
                if job.handle.loop == 0 { lanes[lane]!.handle.loop = 1 }
            }
            lanes[lane]!.handle.frameInLoop = frameInLoop
            if job.handle.toSkip > 0 {
                // A frame the item holds already, decoded again by a fresh decoder: not delivered.
                lanes[lane]!.handle.toSkip -= 1
                return job.cancelled ? finish(lane: lane) : nextFrame(lane)
            }
            decodedBytesTotal += table.frameBytes[index]
            // PrefetchJob.deliver: the job decides from what it delivered whether to go on, then hands the frame
            // over; a stop from the scheduler takes effect at the next frame, as with the live control queue.
            var more = false
            if !job.stopped {
                var deliveredSeconds = job.deliveredSeconds
                if job.hadFirst || job.delivered > 0 { deliveredSeconds += table.frameDuration[index] }
                let delivered = job.delivered + 1
                lanes[lane]!.deliveredSeconds = deliveredSeconds
                lanes[lane]!.delivered = delivered
                more = PrefetchRules.jobNeedsMore(target: job.target, hadFirstFrame: job.hadFirst,
                                                  bufferedAtStart: job.bufferedAtStart, delivered: delivered,
                                                  deliveredSeconds: deliveredSeconds, stopped: false)
            }
            deliver(to: index, lane: lane)
            if more && !lanes[lane]!.cancelled { nextFrame(lane) } else { finish(lane: lane) }
        case .done:
            break
        }
    }

    /// MediaPreparer's `job.reached(stage)`.
    private mutating func reach(_ stage: PrefetchStage, index: Int, lane: Int) {
        machine.reach(stage, index: index, lane: lane)
        perform()
    }
}
