import Prefetch

/// One simulated run of one policy over one scenario: a discrete-event simulation in virtual time.
///
/// Timed events (swipes, playback frames falling due, bandwidth changes) wait in an ``EventQueue``; the work on the
/// lanes is fluid — each running step has work left (CPU seconds, bytes, or seconds of waiting) and a rate: CPU
/// steps share the cores by weight as Linux shares them between the lanes' nice levels (the lane kept for the item on
/// screen at nice 0 weighs 1024, background lanes at nice 10 weigh 110 (PrefetchRules' levels); no thread gets more than one core), downloads
/// share the bandwidth equally. The loop always advances to whichever comes first, the next event or the next step
/// to finish. Single-threaded and deterministic: the same scenario gives the same numbers.
struct SimulationEngine {
    let scenario: Scenario
    let policy: any PrefetchPolicy
    let rules: PrefetchRules
    let items: FeedItems
    /// Skip steady playback analytically (exactly: see `fastForwardPlayback`). Off only to test that it is exact.
    let fastForward: Bool

    enum Event {
        case swipe(Int)
        case end
        case playbackTick(generation: Int)
        case bandwidthChange
    }

    var events = EventQueue<Event>()
    var now = 0.0
    /// The viewer's place in the feed (FeedPlayer moves through the same value).
    var position: FeedPosition
    /// The item on screen.
    var current: Int { position.current }
    /// The scheduler: the live engine's state machine (see SimulationEngine+Scheduler).
    var machine: PrefetchStateMachine
    /// Per item, per lane: what the machine accounts for but does not hold — decoders kept between jobs, and the
    /// job running on each lane as a step machine.
    var handles = KeptHandles()
    var table: ItemTable
    var lanes: [SimJob?]
    var cappedScratch: [Bool]
    /// Every action performed, when recorded (``recordActions()``).
    var trace: [PrefetchStateMachine.Action]?
    var eventTrace: [PrefetchEvent] = []
    /// Frames decoded by jobs (kept or not).
    var framesDecoded = 0
    var ratesDirty = true
    var bandwidth = 0.0

    // The viewer.
    var pendingFirst: (index: Int, since: Double, isSwipe: Bool, step: Int)?
    var metrics: SimulationMetrics
    var ttff: [Double] = []
    var outcomes: [SwipeOutcome] = []
    var shownBytes = 0
    var finished = false

    // Playback of the current item (FeedPlayer.runPlayback).
    var generation = 0
    var playing = false
    var origin = 0.0
    var elapsed = 0.0
    var stalledSince: Double?

    init(scenario: Scenario, policy: any PrefetchPolicy, items: FeedItems, fastForward: Bool) {
        self.scenario = scenario
        self.policy = policy
        self.items = items
        self.fastForward = fastForward
        rules = PrefetchRules(workers: scenario.workers, budget: scenario.budget,
                              keepHandlesWithin: scenario.keepHandlesWithin, feedLength: scenario.feedLength,
                              wraps: scenario.wraps)
        machine = PrefetchStateMachine(policy: policy, rules: rules, reportsEvents: false)
        position = FeedPosition(length: scenario.feedLength, wraps: scenario.wraps)
        lanes = Array(repeating: nil, count: rules.workers + 1)
        cappedScratch = Array(repeating: false, count: rules.workers + 1)
        table = ItemTable(items: items, costs: scenario.costs, budget: scenario.budget)
        metrics = SimulationMetrics(policy: policy.name)
        metrics.memoryBudget = scenario.budget
    }

    /// Runs the session to its end and returns the metrics.
    mutating func run() -> SimulationMetrics {
        if let network = scenario.network {
            let r = network.bandwidth.rate(at: 0)
            bandwidth = r.bitsPerSecond
            if r.changesAt.isFinite { events.push(.bandwidthChange, at: r.changesAt) }
        }
        // FeedPlayer.start(at: 0): the first screen, not a swipe.
        applyPosition()
        pendingFirst = (0, 0, false, -1)
        pump()
        while !finished {
            if ratesDirty { updateRates() }
            var nextLane = -1
            var jobTime = Double.infinity
            for lane in lanes.indices {
                guard let job = lanes[lane], job.rate > 0 else { continue }
                // A whole core (rate 1) is the common case; dividing by 1 changes nothing, so skip it.
                let t = now + (job.rate == 1 ? job.remaining : job.remaining / job.rate)
                if t < jobTime {
                    jobTime = t
                    nextLane = lane
                }
            }
            let eventTime = events.nextTime ?? .infinity
            if nextLane >= 0, jobTime <= eventTime {
                advance(to: jobTime, completing: nextLane)
                stepFinished(lane: nextLane)
            } else if let (time, event) = events.pop() {
                advance(to: time, completing: -1)
                handle(event)
            } else {
                break  // nothing left to happen (cannot occur: the session's end is always scheduled)
            }
        }
        return summary()
    }

    /// Moves virtual time to `time`, charging every running step its progress; the step on lane `completing` (or
    /// none, -1) is done.
    private mutating func advance(to time: Double, completing: Int) {
        let dt = time - now
        if dt > 0 {
            if machine.runningJobs > (completing >= 0 ? 1 : 0) {
                // One uniqueness check for the loop instead of one per lane.
                lanes.withUnsafeMutableBufferPointer { lanes in
                    for lane in lanes.indices where lane != completing {
                        guard let job = lanes[lane] else { continue }
                        lanes[lane]!.remaining = max(0, job.remaining - job.rate * dt)
                    }
                }
            }
            now = time
        }
        if completing >= 0 { lanes[completing]!.remaining = 0 }
    }

    private mutating func handle(_ event: Event) {
        switch event {
        case .swipe(let step): swipe(step)
        case .end:
            endPlayback()
            finished = true
        case .playbackTick(let g): if g == generation && playing { playbackTick() }
        case .bandwidthChange:
            guard let network = scenario.network else { return }
            let r = network.bandwidth.rate(at: now)
            bandwidth = r.bitsPerSecond
            ratesDirty = true
            if r.changesAt.isFinite { events.push(.bandwidthChange, at: max(r.changesAt, now)) }
        }
    }

    /// Water-filling of the cores by weight (at most one core a thread), then equal shares of the bandwidth.
    /// ``Scenario/backgroundLoad`` adds that many nice-0 threads of other work (fractional: the last one partly).
    private mutating func updateRates() {
        ratesDirty = false
        var downloads = 0
        var cpuWeight = 0.0
        for lane in lanes.indices {
            guard let job = lanes[lane] else { continue }
            switch job.kind {
            case .cpu: cpuWeight += weight(lane)
            case .download: downloads += 1
            case .wait: lanes[lane]!.rate = 1
            }
        }
        if cpuWeight > 0 {
            // Threads in order of weight: other work (1024) first, then the lane kept for the item on screen (1024),
            // then background lanes (110). The heaviest take a whole core while their fair share exceeds one.
            var capacity = Double(scenario.cores)
            var other = scenario.backgroundLoad
            var total = cpuWeight + other * 1024
            while other > 0, capacity > 0, 1024 * capacity / total >= 1 {
                let share = min(other, 1)
                capacity -= share
                total -= share * 1024
                other -= share
            }
            // `cappedScratch[lane]`: the lane runs a CPU step not yet given a whole core.
            for lane in lanes.indices { cappedScratch[lane] = lanes[lane]?.kind == .cpu }
            while true {
                var heaviest = -1
                for lane in lanes.indices where cappedScratch[lane] {
                    if heaviest < 0 || weight(lane) > weight(heaviest) { heaviest = lane }
                }
                guard heaviest >= 0 else { break }
                guard capacity > 0, total > 0, weight(heaviest) * capacity / total >= 1 else {
                    for lane in lanes.indices where cappedScratch[lane] {
                        lanes[lane]!.rate = total > 0 ? max(0, weight(lane) * capacity / total) : 0
                    }
                    break
                }
                lanes[heaviest]!.rate = 1
                cappedScratch[heaviest] = false
                capacity -= 1
                total -= weight(heaviest)
            }
        }
        if downloads > 0 {
            let share = bandwidth / 8 / Double(downloads)
            for lane in lanes.indices where lanes[lane]?.kind == .download { lanes[lane]!.rate = share }
        }
    }

    /// Linux's CFS weight of the job's lane at the live engine's nice level for it (``PrefetchRules/nice(ofLane:)``):
    /// 1024 for the lane kept for the item on screen (nice 0), 110 for background lanes (nice 10).
    private func weight(_ lane: Int) -> Double { PrefetchRules.cpuWeight(nice: rules.nice(ofLane: lane)) }

    private mutating func summary() -> SimulationMetrics {
        var m = metrics
        let sorted = ttff.sorted()
        m.timeToFirstFrameP50 = Percentile.nearestRank(0.50, of: sorted)
        m.timeToFirstFrameP95 = Percentile.nearestRank(0.95, of: sorted)
        m.timeToFirstFrameP99 = Percentile.nearestRank(0.99, of: sorted)
        m.timeToFirstFrameMean = sorted.isEmpty ? 0 : sorted.reduce(0, +) / Double(sorted.count)
        let tally = machine.counters
        m.framesDecoded = framesDecoded
        m.wastedFrames = max(0, framesDecoded - m.framesShown)
        m.wastedBytes = max(0, decodedBytesTotal - shownBytes)
        m.cancellations = tally.cancelledBeforeStart + tally.cancelledWhileRunning
        m.jobsStarted = tally.jobsStarted
        m.peakDecodedBytes = tally.peakDecodedBytes
        m.virtualSeconds = now
        if scenario.recordsSwipes { m.outcomes = outcomes }
        return m
    }

    /// Bytes of every frame decoded.
    var decodedBytesTotal = 0
}
