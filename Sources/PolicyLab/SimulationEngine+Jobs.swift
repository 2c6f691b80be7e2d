import Prefetch

/// The preparer half: FeedPlayer's MediaPreparer as a step machine charged virtual time.
extension SimulationEngine {
    /// PrefetchScheduler.start + MediaPreparer.prepare's beginning: takes the slot's handle and picks the first step.
    mutating func start(_ s: SimSlot, job: SimJob, target: PrefetchStage) {
        job.target = target
        job.hadFirst = s.hasFirst
        job.bufferedAtStart = s.bufferedSeconds
        job.handle = s.handle
        s.handle = nil
        ratesDirty = true
        if job.handle == nil {
            job.handle = SimHandle()
            if let network = scenario.network {
                set(job, .connect, 2 * network.roundTrip)
            } else {
                set(job, .open, table.openSeconds[job.index])
            }
        } else {
            continueToFrames(job)
        }
    }

    private mutating func set(_ job: SimJob, _ phase: SimJob.Phase, _ work: Double) {
        let before = job.kind
        job.phase = phase
        job.remaining = work
        if job.kind != before || job.rate == 0 { ratesDirty = true }
    }

    /// Cancels a job: a download or a wait is interrupted at once (FFmpeg's interrupt callback); a CPU step runs to
    /// its end, then the job returns.
    mutating func cancel(_ job: SimJob) {
        job.cancelled = true
        if job.kind != .cpu { job.remaining = 0 }
    }

    private mutating func finishSoon(_ job: SimJob) { set(job, .done, 0) }

    private mutating func continueToFrames(_ job: SimJob) {
        guard job.target != .probed else { return finishSoon(job) }
        if job.handle?.decoderOpen == true {
            nextFrame(job)
        } else {
            set(job, .decoderOpen, table.decoderOpenSeconds[job.index])
        }
    }

    private mutating func nextFrame(_ job: SimJob) {
        let handle = job.handle!
        if let network = scenario.network {
            let duration = items.duration[job.index]
            let needed = min(duration, Double(handle.frameInLoop + 1) / table.frameRate[job.index])
            if handle.downloadedSeconds < needed - 1e-9 {
                return set(job, .chunkWait, network.roundTrip)
            }
        }
        set(job, .frame, handle.frameInLoop == 0 ? table.firstFrameSeconds[job.index] : table.frameSeconds[job.index])
    }

    private mutating func chunkBytes(_ index: Int, seconds: Double) -> Double {
        let bitrate = scenario.costs.items[items.costIndex[index]].sizeBytes.map { Double($0) * 8 / items.duration[index] } ?? scenario.network!.bitrate
        return bitrate / 8 * seconds
    }

    /// The step the job was in has finished. A job that returns is finished here at once (the main loop calls this,
    /// never `pump`, so finishing cannot recurse); a job that has nothing to do when it starts returns through a
    /// zero-length step instead.
    mutating func stepFinished(_ job: SimJob) {
        if job.phase == .done || job.cancelled { return finish(job) }
        let handle = job.handle!
        switch job.phase {
        case .connect:
            set(job, .probeDownload, Double(scenario.network!.probeBytes))
        case .probeDownload:
            set(job, .open, table.openSeconds[job.index])
        case .open:
            // MediaPreparer: `job.reached(.probed)`; a job wanting only a probe is done.
            reach(.probed, index: job.index, job: job)
            let more = PrefetchRules.jobNeedsMore(target: job.target, hadFirstFrame: job.hadFirst,
                                                  bufferedAtStart: job.bufferedAtStart, delivered: job.delivered,
                                                  deliveredSeconds: job.deliveredSeconds, stopped: job.stopped)
            if more { continueToFrames(job) } else { finish(job) }
        case .decoderOpen:
            handle.decoderOpen = true
            nextFrame(job)
        case .chunkWait:
            let remainingMedia = items.duration[job.index] - handle.downloadedSeconds
            let seconds = min(scenario.network!.chunkSeconds, max(remainingMedia, 0))
            set(job, .chunkDownload, chunkBytes(job.index, seconds: seconds))
        case .chunkDownload:
            handle.downloadedSeconds = min(items.duration[job.index],
                                           handle.downloadedSeconds + scenario.network!.chunkSeconds)
            set(job, .frame, handle.frameInLoop == 0 ? table.firstFrameSeconds[job.index]
                                                       : table.frameSeconds[job.index])
        case .frame:
            handle.frameInLoop += 1
            if handle.frameInLoop >= table.framesPerLoop[job.index] { handle.frameInLoop = 0 }  // seek back: loop
            decodedBytesTotal += table.frameBytes[job.index]
            // PrefetchJob.deliver: the job decides from what it delivered whether to go on, then hands the frame
            // over; a stop from the scheduler takes effect at the next frame, as with the live control queue.
            var more = false
            if !job.stopped {
                if job.hadFirst || job.delivered > 0 { job.deliveredSeconds += table.frameDuration[job.index] }
                job.delivered += 1
                more = PrefetchRules.jobNeedsMore(target: job.target, hadFirstFrame: job.hadFirst,
                                                  bufferedAtStart: job.bufferedAtStart, delivered: job.delivered,
                                                  deliveredSeconds: job.deliveredSeconds, stopped: false)
            }
            deliver(to: job.index, job: job)
            if more && !job.cancelled { nextFrame(job) } else { finish(job) }
        case .done:
            break
        }
    }

    /// PrefetchScheduler.reach.
    private mutating func reach(_ stage: PrefetchStage, index: Int, job: SimJob) {
        guard let s = slots[index], s.job === job, s.wanted != nil else { return }
        if s.stage == nil || stage > s.stage! { s.stage = stage }
    }
}
