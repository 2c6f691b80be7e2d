import ArgumentParser
import Feed
import FeedPlayer
import Foundation
import Media
import PolicyLab
import Prefetch

/// `videofeed play [SOURCE]`: the feed engine headless, driven by a swipe script or random swipes.
struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Run the feed engine headless over a feed with scripted or random swipes.",
        discussion: """
        Each swipe prints the item, hit or miss, and the time to its first frame; then the summary metrics. \
        Between swipes the current item plays headless (frames handed out at their presentation times) for the \
        dwell time, while the window around it is prefetched. A miss waits for the first frame (up to --wait-ms).
        """
    )

    @OptionGroup var feedSource: FeedSourceOptions
    @OptionGroup var mediaPolicy: MediaPolicyOptions

    @Option(help: "Swipe script: n (next), p (previous), jN (jump to item N), comma-separated, e.g. \"n,n,p,n,j5\".")
    var swipes: SwipeList?

    @Option(help: "Random swipes instead of a script: how many.")
    var random: Int?

    @Option(help: "Replay a swipe trace (CSV or JSON Lines, as `videofeed simulate --trace`): its gaps are the watch times.")
    var trace: String?

    @Option(help: "Seed for --random and the dwell times.")
    var seed: UInt64 = 1

    @Option(name: .customLong("dwell-ms"), help: "Time on each item before the next swipe, MIN-MAX milliseconds.")
    var dwell = MillisecondRange(300...300)

    @Option(help: "Prefetch policy: window, forwardN (e.g. forward2), tiktokLike, staged, swipeAware.")
    var policy: PolicyChoice = .window

    @Option(help: "Display box WxH the frames are fitted into.")
    var size: Size = Size(width: 720, height: 1280)

    @Option(name: .customLong("pix-fmt"), help: "Display pixel format: rgb24, rgba, bgra, gray, yuv420p.")
    var pixelFormat: PixelFormat = .bgra

    @Option(help: "Memory budget for decoded frames, e.g. 256MiB, 64M, or bytes.")
    var budget: ByteCount = .mebibytes(256)

    @Option(help: "Concurrent prefetch jobs (default: cores).")
    var workers: Int?

    @Option(name: .customLong("decoder-threads"), help: "Decoder threads per item (default: cores).")
    var decoderThreads: Int?

    @Flag(inversion: .prefixedNo,
          help: "Wrap around: after the last item comes the first. Default: on with --random (a random session at the end of a feed that does not wrap would mostly stay put), off otherwise.")
    var wrap: Bool?

    /// Whether the feed wraps: as asked, else only for random swipes.
    var wraps: Bool { wrap ?? (random != nil) }

    @Option(name: .customLong("wait-ms"), help: "Longest wait for a missed first frame.")
    var waitMilliseconds: Int = 10_000

    @Option(help: "Write the frame shown after each swipe as PNG into this folder.")
    var dump: String?

    @Flag(help: "Print JSON (per swipe and the metrics) instead of text.")
    var json = false

    func validate() throws {
        if [swipes != nil, random != nil, trace != nil].filter({ $0 }).count > 1 {
            throw ValidationError("give only one of --swipes, --random and --trace")
        }
        if let random { try NumberRules.count(random, "--random", max: 10_000_000) }
        if let workers { try NumberRules.count(workers, "--workers", max: NumberRules.maxThreads) }
        if let decoderThreads { try NumberRules.count(decoderThreads, "--decoder-threads", max: NumberRules.maxThreads) }
        try NumberRules.count(waitMilliseconds, "--wait-ms", max: Int(NumberRules.maxSeconds) * 1000)
    }

    struct SwipeRecord: Encodable {
        var swipe: Int
        var action: String
        var index: Int
        var publicID: String
        var result: String
        var timeToFirstFrameMs: Double?
        /// How the item played during the dwell after this swipe.
        var playback: PlaybackStatistics?
    }

    struct Report: Encodable {
        var policy: String
        /// One record per action, including those that did not move (`"result": "stay"`).
        var swipes: [SwipeRecord]
        /// Actions that did not move: the metrics count them as neither swipes nor hits.
        var stayed: Int
        /// How the first item played before the first swipe.
        var initialPlayback: PlaybackStatistics
        /// Every dwell's playback summed (the first item's included).
        var playback: PlaybackTotals
        var metrics: FeedPlayerMetrics
        var memory: MemoryReport
    }

    /// The process's resident memory (from /proc/self/statm): after the 100th swipe (when there were that many) and
    /// after the last one, for soak runs.
    struct MemoryReport: Encodable {
        var residentAfter100Swipes: Int?
        var residentAtEnd: Int
        var growthSince100Swipes: Int? { residentAfter100Swipes.map { residentAtEnd - $0 } }

        enum CodingKeys: String, CodingKey { case residentAfter100Swipes, residentAtEnd, growthSince100Swipes }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeIfPresent(residentAfter100Swipes, forKey: .residentAfter100Swipes)
            try c.encode(residentAtEnd, forKey: .residentAtEnd)
            try c.encodeIfPresent(growthSince100Swipes, forKey: .growthSince100Swipes)
        }
    }

    func run() throws {
        let loader = try feedSource.makeLoader(format: nil, for: .browse)
        var configuration = FeedPlayerConfiguration()
        configuration.displaySize = size
        configuration.pixelFormat = pixelFormat
        configuration.memoryBudget = budget.bytes
        configuration.wraps = wraps
        configuration.openOptions = mediaPolicy.applied(to: configuration.openOptions)
        if let workers { configuration.workers = max(1, workers) }
        if let decoderThreads { configuration.decoderThreads = decoderThreads }
        let chosen = policy.policy
        // A paged listing is read page by page as the viewer goes (FeedPlayer asks for the next page before the
        // window reaches the end of what is loaded); a folder or a manifest is one page.
        let feed = Feed(loader: loader, prefetchDistance: 0)
        let player: FeedPlayer
        let settings = configuration
        switch BlockingTask.run({ try await FeedPlayer.paging(feed, policy: chosen, configuration: settings) }) {
        case .success(let made): player = made
        case .failure(let error):
            Console.error("play: cannot load the feed: \(Console.describe(error))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        var notesPrinted = (skipped: 0, warnings: 0)
        /// Prints the skipped entries and warnings of the pages loaded since the last call; returns how many entries
        /// were skipped in all.
        @discardableResult
        func printFeedNotes() -> Int {
            let notes = (try? BlockingTask.run({ (await feed.skipped, await feed.warnings) }).get()) ?? ([], [])
            for skipped in notes.0.dropFirst(notesPrinted.skipped) {
                Console.error("skipped feed entry: \(Console.safe(skipped.description))")
            }
            for warning in notes.1.dropFirst(notesPrinted.warnings) { Console.warning(Console.safe(warning)) }
            notesPrinted = (notes.0.count, notes.1.count)
            return notes.0.count
        }
        printFeedNotes()
        guard player.itemCount > 0 else {
            Console.error("play: the feed is empty")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        player.onEvent { event in
            if case .pageFailed(let message) = event {
                Console.warning("the next page of the listing failed (playing on with what is loaded): "
                                + Console.safe(message))
            }
        }
        var rng = SimRandom(seed: seed)
        // A trace gives the swipes and the watch time after each one; otherwise the dwell range does.
        var session: SwipeSession?
        if let trace {
            do {
                session = try SwipeTrace.load(path: trace)
            } catch {
                Console.error("play: \(Console.describe(error))")
                throw ExitCode(ExitStatus.couldNotRun)
            }
        }
        let actions = session.map { $0.steps.map(\.action) } ?? swipes?.actions
            ?? SwipeScript.random(count: random ?? 10, feedLength: player.itemCount, rng: &rng)
        if let dump {
            do {
                try FileManager.default.createDirectory(atPath: dump, withIntermediateDirectories: true)
            } catch {
                Console.error("play: cannot create the --dump folder \(Console.safe(dump)): \(SystemErrorText.reason(error))")
                throw ExitCode(ExitStatus.couldNotRun)
            }
        }

        player.start(at: 0)
        _ = player.waitForFirstFrame(of: 0, timeout: Double(waitMilliseconds) / 1000)
        let dwellRange = dwell.milliseconds
        var totals = PlaybackTotals()
        // The first item is watched for a dwell too before the first swipe, as a viewer would.
        func dwellOnCurrent(_ watch: Double?) -> PlaybackStatistics {
            let playback = player.play { _ in }
            let seconds = watch ?? Double(dwellRange.lowerBound + Int(rng.next() % UInt64(dwellRange.count))) / 1000
            Thread.sleep(forTimeInterval: seconds)
            playback.stop()
            playback.wait(timeout: 5)
            let stats = playback.statistics
            totals.add(stats)
            return stats
        }
        let initialPlayback = dwellOnCurrent(session?.initialWatch)
        var records: [SwipeRecord] = []
        var stayed = 0
        var residentAfter100: Int? = nil
        for (n, action) in actions.enumerated() {
            let before = player.currentIndex
            let started = DispatchTime.now().uptimeNanoseconds
            let outcome: CurrentFrame
            switch action {
            case .next: outcome = player.next()
            case .previous: outcome = player.previous()
            case .jump(let i): outcome = player.move(to: i)
            }
            let returned = DispatchTime.now().uptimeNanoseconds
            let index = player.currentIndex
            var record = SwipeRecord(swipe: n + 1, action: action.description, index: index,
                                     publicID: player.item(at: index)?.publicID ?? "", result: "", timeToFirstFrameMs: nil)
            var shown: PlayerFrame?
            switch outcome {
            case _ where index == before:
                // `n` on the last item or `p` on the first (no --wrap), or a jump to the item on screen: not a swipe,
                // as FeedPlayer counts it; the item on screen goes on playing.
                record.result = "stay"
                stayed += 1
            case .ready(let frame):
                record.result = "hit"
                record.timeToFirstFrameMs = Double(returned - started) / 1e6
                shown = frame
            case .loading:
                let arrived = player.waitForFirstFrame(of: index, timeout: Double(waitMilliseconds) / 1000)
                record.timeToFirstFrameMs = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
                switch arrived {
                case .ready(let frame): record.result = "miss"; shown = frame
                case .failed(let message): record.result = "failed: \(message)"; record.timeToFirstFrameMs = nil
                case .loading: record.result = "miss (no frame within --wait-ms)"
                }
            case .failed(let message):
                record.result = "failed: \(message)"
            }
            if let dump, let shown {
                let path = (dump as NSString).appendingPathComponent(String(format: "swipe-%04d-item%d.png", n + 1, index))
                do {
                    try ImageEncoder(format: .png).write(shown.image, to: path)
                } catch {
                    Console.error("play: cannot write the shown frame: \(Console.describe(error))")
                    throw ExitCode(ExitStatus.couldNotRun)
                }
            }
            // Dwell: the current item plays while the window around it is prefetched; the next swipe stops it.
            record.playback = dwellOnCurrent(session?.steps[n].watch)
            if !json {
                let ttff = record.timeToFirstFrameMs.map { String(format: "%8.2f ms", $0) } ?? "       -   "
                let act = Console.pad(action.description, 4)
                let result = Console.pad(record.result, 5)
                let played = record.playback.map {
                    String(format: "  %3d/%-3d on time, %d stalls (%.0f ms)", $0.framesOnTime, $0.framesDue, $0.stalls,
                           $0.stallSeconds * 1000)
                } ?? ""
                Console.out(String(format: "%5d ", n + 1) + act + String(format: " #%-4d ", index) + ttff + "  "
                            + result + "  " + Console.safe(record.publicID) + played + "\n")
            }
            records.append(record)
            if n + 1 == 100 { residentAfter100 = ResidentMemory.bytes() }
        }
        let metrics = player.metrics
        let memory = MemoryReport(residentAfter100Swipes: residentAfter100, residentAtEnd: ResidentMemory.bytes())
        player.shutdown()
        if json {
            let report = Report(policy: chosen.name, swipes: records, stayed: stayed, initialPlayback: initialPlayback,
                                playback: totals, metrics: metrics, memory: memory)
            let data = try Console.jsonEncoder().encode(report)
            Console.out(String(decoding: data, as: UTF8.self) + "\n")
        } else {
            Console.out(PlaySummary.text(metrics, policy: chosen.name))
            Console.out(PlaySummary.text(totals))
            if stayed > 0 {
                Console.out("\(stayed) of \(actions.count) actions did not move (the end of the feed without --wrap, or a "
                            + "jump to the item on screen)\n")
            }
            Console.out(PlaySummary.text(memory))
        }
        // Exit 1 when an item could not be played or a feed entry was invalid: each was named on the way.
        if metrics.failures > 0 || printFeedNotes() > 0 { throw ExitCode(ExitStatus.someFailed) }
    }
}

/// Every dwell's ``PlaybackStatistics`` summed: how smoothly the whole session played.
struct PlaybackTotals: Encodable {
    var framesShown = 0
    var framesOnTime = 0
    var framesDue = 0
    var stalls = 0
    var stallSeconds = 0.0
    /// Dwells (items watched, the first one included) and those with at least one stall.
    var dwells = 0
    var dwellsWithStalls = 0

    /// Frames shown on time over frames due, in percent.
    var onTimePercent: Double { framesDue == 0 ? 100 : 100 * Double(framesOnTime) / Double(framesDue) }

    mutating func add(_ s: PlaybackStatistics) {
        framesShown += s.framesShown
        framesOnTime += s.framesOnTime
        framesDue += s.framesDue
        stalls += s.stalls
        stallSeconds += s.stallSeconds
        dwells += 1
        if s.stalls > 0 { dwellsWithStalls += 1 }
    }

    enum CodingKeys: String, CodingKey {
        case framesShown, framesOnTime, framesDue, stalls, stallSeconds, dwells, dwellsWithStalls, onTimePercent
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(framesShown, forKey: .framesShown)
        try c.encode(framesOnTime, forKey: .framesOnTime)
        try c.encode(framesDue, forKey: .framesDue)
        try c.encode(stalls, forKey: .stalls)
        try c.encode(stallSeconds, forKey: .stallSeconds)
        try c.encode(dwells, forKey: .dwells)
        try c.encode(dwellsWithStalls, forKey: .dwellsWithStalls)
        try c.encode(onTimePercent, forKey: .onTimePercent)
    }
}

/// The metrics as a few readable lines.
enum PlaySummary {
    static func text(_ p: PlaybackTotals) -> String {
        String(format: "playback: %d of %d frames due shown on time (%.2f %%), %d stalls (%.0f ms) in %d of %d dwells\n",
               p.framesOnTime, p.framesDue, p.onTimePercent, p.stalls, p.stallSeconds * 1000, p.dwellsWithStalls,
               p.dwells)
    }

    static func text(_ memory: PlayCommand.MemoryReport) -> String {
        func mib(_ b: Int) -> String { String(format: "%.1f MiB", Double(b) / 1_048_576) }
        guard let after100 = memory.residentAfter100Swipes else { return "resident \(mib(memory.residentAtEnd))\n" }
        return "resident \(mib(after100)) after 100 swipes, \(mib(memory.residentAtEnd)) at the end\n"
    }

    static func text(_ m: FeedPlayerMetrics, policy: String) -> String {
        func mib(_ b: Int) -> String { String(format: "%.1f MiB", Double(b) / 1_048_576) }
        return """
        policy \(policy): \(m.swipes) swipes, \(m.hits) hits, \(m.misses) misses, \(m.failures) failed items
        time to first frame: p50 \(String(format: "%.2f", m.timeToFirstFrameP50)) ms, \
        p95 \(String(format: "%.2f", m.timeToFirstFrameP95)) ms, p99 \(String(format: "%.2f", m.timeToFirstFrameP99)) ms
        stalls \(m.stalls); frames decoded \(m.framesDecoded), shown \(m.framesShown), wasted \(m.wastedFrames); \
        cancellations \(m.cancellations)
        peak decoded \(mib(m.peakDecodedBytes)) of a \(mib(m.memoryBudget)) budget

        """
    }
}
