import Prefetch

/// A file of an item in the simulated server's cache.
enum ServedFile: Hashable {
    case manifest(Int)
    case poster(Int)
    case initialization(Int, rendition: Int)
    case segment(Int, rendition: Int, index: Int)
}

/// PolicyLab's driver of ``ServeScheduler``: the server side of `videofeed serve` in virtual time. It performs the
/// machine's actions as the live `WorkPool` does — a start puts the job on its lane, a cancel ends it at once (a
/// live job stops at its next cancellation check), an answer goes to the waiting fetch — and runs the lanes' jobs
/// as fluid CPU work: the running jobs share the cores equally, none using more than its own parallelism.
struct SimServer {
    /// A job on a lane: CPU-seconds left, and the most cores it uses.
    struct Run {
        var key: JobKey
        var left: Double
        var parallelism: Double
        var cancelled = false
    }

    let items: [ServedItem]
    let cores: Double
    var machine: ServeScheduler
    var lanes: [Run?]
    var cache: Set<ServedFile> = []
    /// Every action taken, when recorded (nil: not recorded).
    var log: [ServeScheduler.Action]?
    /// Answers for the world to deliver, in order.
    var answers: [(waiter: UInt64, key: JobKey, answer: ServeScheduler.Answer)] = []
    var nextWaiter: UInt64 = 0
    /// Jobs started, CPU-seconds used, the most jobs queued at once.
    var jobsStarted = 0
    var cpuSeconds = 0.0
    var peakQueue = 0

    init(items: [ServedItem], rules: ServeScheduler.Rules, cores: Double) {
        self.items = items
        self.cores = cores
        machine = ServeScheduler(rules: rules)
        lanes = Array(repeating: nil, count: rules.workers)
    }

    /// The folder name the jobs of item `index` carry.
    static func folder(_ index: Int) -> String { "\(index)" }

    /// The item of a job.
    static func item(of key: JobKey) -> Int { Int(key.folder) ?? 0 }

    // MARK: Events (each performs the machine's actions)

    mutating func request(_ key: JobKey, now: Double) -> UInt64 {
        nextWaiter += 1
        machine.request(key, waiter: nextWaiter, now: now)
        perform(now: now)
        return nextWaiter
    }

    mutating func hangUp(_ key: JobKey, waiter: UInt64, now: Double) {
        machine.hangUp(key, waiter: waiter, now: now)
        perform(now: now)
    }

    mutating func want(viewer: Int, _ wants: [JobKey: Int], now: Double) {
        machine.want(viewer: viewer, wants, now: now)
        perform(now: now)
    }

    mutating func focus(viewer: Int, on folder: String?, now: Double) {
        machine.focus(viewer: viewer, on: folder, now: now)
        perform(now: now)
    }

    mutating func close(viewer: Int, now: Double) {
        machine.close(viewer: viewer, now: now)
        perform(now: now)
    }

    mutating func advance(now: Double) {
        machine.advance(now: now)
        perform(now: now)
    }

    /// The job `key` ends on its lane now, made or failed, whatever work it had left (for scripted sessions).
    mutating func end(_ key: JobKey, _ ending: ServeScheduler.Ending, now: Double) {
        guard let lane = lanes.firstIndex(where: { $0?.key == key }) else { return }
        lanes[lane] = nil
        if ending == .made { made(key) }
        machine.finish(lane: lane, ending, now: now)
        perform(now: now)
    }

    /// Performs the machine's last actions; cancelled jobs end at once (which may start others).
    private mutating func perform(now: Double) {
        var pending = machine.actions
        while !pending.isEmpty {
            log?.append(contentsOf: pending)
            var ended: [Int] = []
            for action in pending {
                switch action {
                case .start(let key, let lane):
                    let cost = self.cost(of: key)
                    lanes[lane] = Run(key: key, left: cost.cpu, parallelism: cost.parallelism)
                    jobsStarted += 1
                case .cancel(let lane):
                    lanes[lane]?.cancelled = true
                    ended.append(lane)
                case .answer(let waiter, let key, let answer):
                    answers.append((waiter, key, answer))
                case .dropped, .ended, .forget:
                    break
                }
            }
            peakQueue = max(peakQueue, machine.queueDepth)
            pending = []
            for lane in ended where lanes[lane]?.cancelled == true {
                lanes[lane] = nil
                machine.finish(lane: lane, .cancelled, now: now)
                pending += machine.actions
            }
        }
    }

    // MARK: The lanes' CPU

    /// Cores each running job gets now: an equal share, none above its parallelism, what one leaves going to the
    /// others (water filling).
    func rates() -> [Int: Double] {
        var open = lanes.indices.filter { lanes[$0] != nil }
        var rates: [Int: Double] = [:]
        var left = cores
        open.sort { lanes[$0]!.parallelism < lanes[$1]!.parallelism }
        while !open.isEmpty {
            let share = left / Double(open.count)
            let lane = open[0]
            let cap = lanes[lane]!.parallelism
            if cap <= share {
                rates[lane] = cap
                left -= cap
                open.removeFirst()
            } else {
                for lane in open { rates[lane] = share }
                break
            }
        }
        return rates
    }

    /// Seconds until the next running job finishes, if one runs.
    func nextCompletion() -> Double? {
        let rates = rates()
        return rates.compactMap { lane, rate in rate > 0 ? max(0, lanes[lane]!.left) / rate : nil }.min()
    }

    /// Runs the lanes for `seconds`, then finishes every job whose work is done (at `now`, the end of the span).
    mutating func run(for seconds: Double, now: Double) {
        if seconds > 0 {
            for (lane, rate) in rates() {
                lanes[lane]!.left -= rate * seconds
                cpuSeconds += rate * seconds
            }
        }
        for lane in lanes.indices {
            guard let run = lanes[lane], run.left <= 1e-9 else { continue }
            lanes[lane] = nil
            // A file the server cannot open fails every job of it (a poster too), after its cost.
            let fails = items[Self.item(of: run.key)].fails
            if !fails { made(run.key) }
            machine.finish(lane: lane, fails ? .failed : .made, now: now)
            perform(now: now)
        }
    }

    /// What a job costs: by its artifact, from its item's costs.
    func cost(of key: JobKey) -> ServedItem.Cost {
        let item = items[Self.item(of: key)]
        switch key.artifact {
        case .manifest: return item.manifest
        case .poster: return item.poster
        case .initialization: return item.firstSegment
        case .segment(_, let k): return k == 0 ? item.firstSegment : item.segment
        case .segments:
            let n = Double(max(1, item.renditions.count))
            return .init(wall: item.segment.wall * n, cpu: item.segment.cpu * n)
        case .full:
            let n = Double(max(1, item.renditions.count) * item.segmentStarts.count)
            return .init(wall: item.manifest.wall + item.segment.wall * n, cpu: item.manifest.cpu + item.segment.cpu * n)
        }
    }

    /// Puts what a made job wrote into the cache.
    private mutating func made(_ key: JobKey) {
        let index = Self.item(of: key)
        let item = items[index]
        switch key.artifact {
        case .manifest:
            cache.insert(.manifest(index))
            for r in item.renditions.indices {
                cache.insert(.initialization(index, rendition: r))
                cache.insert(.segment(index, rendition: r, index: 0))
            }
        case .poster:
            cache.insert(.poster(index))
        case .initialization(let r):
            cache.insert(.initialization(index, rendition: r))
        case .segment(let r, let k):
            cache.insert(.initialization(index, rendition: r))
            cache.insert(.segment(index, rendition: r, index: k))
        case .segments(let k):
            for r in item.renditions.indices { cache.insert(.segment(index, rendition: r, index: k)) }
        case .full:
            cache.insert(.manifest(index))
            for r in item.renditions.indices {
                cache.insert(.initialization(index, rendition: r))
                for k in item.segmentStarts.indices { cache.insert(.segment(index, rendition: r, index: k)) }
            }
        }
    }

    /// The job that makes `file`.
    static func job(for file: ServedFile) -> JobKey {
        switch file {
        case .manifest(let i): JobKey(folder: folder(i), artifact: .manifest)
        case .poster(let i): JobKey(folder: folder(i), artifact: .poster)
        case .initialization(let i, let r): JobKey(folder: folder(i), artifact: .initialization(rendition: r))
        case .segment(let i, let r, let k): JobKey(folder: folder(i), artifact: .segment(rendition: r, index: k))
        }
    }
}
