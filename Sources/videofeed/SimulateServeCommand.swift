import ArgumentParser
import Feed
import FeedServer
import Foundation
import Media
import PolicyLab
import Prefetch
import Transcode

/// `videofeed simulate serve SOURCE`: many viewers of `videofeed serve SOURCE` in virtual time.
struct SimulateServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Predict what viewers of `videofeed serve SOURCE` get: first frames, hits, stalls, CPU.",
        discussion: """
        The server's own scheduler and prefetch policy run in virtual time; viewers follow the page's behaviour \
        (scripts/serve-replay.py's viewer model); jobs cost what `videofeed simulate calibrate --serve` measured \
        (--costs; items it did not measure are estimated by size, their facts read from the files). Viewers come \
        from --trace (CSV viewer,time_s,index) or are drawn for --seed. The same inputs give the same numbers. \
        See docs/policylab.md.
        """
    )

    @Argument(help: "The folder `videofeed serve` would serve.")
    var source: String

    @Option(help: "CSV viewer,time_s,index: at time_s that viewer shows feed item index.")
    var trace: String?

    @Option(help: "Serve cost profile from `videofeed simulate calibrate --serve` (default: the built-in one).")
    var costs: String?

    @Option(help: "The server's workers (as serve --workers).")
    var workers: Int = ServeEngine.Configuration(cache: URL(fileURLWithPath: "/")).workers

    @Option(help: "Cores the workers share.")
    var cores: Double = Double(ProcessInfo.processInfo.activeProcessorCount)

    @Option(help: "The server's prefetch policy (as serve --policy): window, forwardN, tiktokLike, staged, swipeAware.")
    var policy: PolicyChoice = .staged

    @Option(help: "The viewers' box in device pixels, WxH.")
    var box: String = "540x960"

    @Option(name: .customLong("request-ms"), help: "Milliseconds an HTTP answer takes besides the server's work.")
    var requestMilliseconds: Double = 2

    @Option(help: "Without --trace: viewers drawn.")
    var viewers: Int = 20

    @Option(help: "Without --trace: seconds each viewer moves for.")
    var seconds: Double = 600

    @Option(help: "Without --trace: seconds on an item, MIN,MAX.")
    var dwell: String = "1,3"

    @Option(help: "Without --trace: the share of moves that jump to a random item.")
    var jump: Double = 0.33

    @Option(help: "Without --trace: viewers arrive within this many seconds.")
    var arrival: Double = 10

    @Option(help: "Without --trace: the seed of the drawn trace.")
    var seed: UInt64 = 1

    @Option(help: "Order of the folder's items, as serve --sort: newest or name (a trace's index is a place in it).")
    var sort: SortOption = .newest

    @Option(name: .customLong("write-trace"), help: "Write the trace replayed (CSV) to this file.")
    var writeTrace: String?

    @Flag(help: "Print the result as JSON.")
    var json = false

    @Flag(name: .customLong("per-move"), help: "With --json: every move's figures too.")
    var perMove = false

    @OptionGroup var rendition: RenditionOptions
    @OptionGroup var mediaPolicy: MediaPolicyOptions

    func validate() throws {
        try rendition.requireH264Only("simulate serve")
    }

    func run() throws {
        let policy = self.policy.policy
        let parts = box.lowercased().split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, parts.allSatisfy({ (1...16_384).contains($0) }) else {
            Console.error("--box: expected WxH in device pixels, e.g. 540x960")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        let profile: ServeCosts
        do {
            profile = try costs.map { try ServeCosts.load(from: URL(fileURLWithPath: $0)) } ?? ServeCosts.builtIn
        } catch {
            Console.error(Console.describe(error))
            throw ExitCode(ExitStatus.couldNotRun)
        }
        let items = try servedItems(profile: profile)
        let trace: ViewerTrace
        if let path = self.trace {
            do { trace = try ViewerTrace.load(path: path) } catch {
                Console.error(Console.describe(error))
                throw ExitCode(ExitStatus.couldNotRun)
            }
        } else {
            let bounds = dwell.split(separator: ",").compactMap { Double($0) }
            guard bounds.count == 2, bounds[0] > 0, bounds[1] >= bounds[0], viewers >= 0, seconds >= 0 else {
                Console.error("--dwell: expected MIN,MAX seconds (0 < MIN <= MAX)")
                throw ExitCode(ExitStatus.couldNotRun)
            }
            trace = ViewerTrace.generate(viewers: viewers, items: items.count, seconds: seconds,
                                         dwell: bounds[0]...bounds[1], jump: jump, arrival: arrival, seed: seed)
        }
        if let writeTrace {
            do {
                try AtomicFile.write(Array(trace.csv.utf8), to: writeTrace)
            } catch {
                Console.error("\(Console.safe(writeTrace)): \(Console.describe(error))")
                throw ExitCode(ExitStatus.couldNotRun)
            }
        }
        let configuration = ServeSimulation.Configuration(
            workers: workers, cores: cores, box: (parts[0], parts[1]), window: PageWindow(policy: policy),
            requestSeconds: requestMilliseconds / 1000, segmentSeconds: profile.segmentSeconds)
        let started = Date()
        var result = ServeSimulation(items: items, policy: policy, configuration: configuration).run(trace)
        if !perMove { result.perMove = nil }
        let elapsed = Date().timeIntervalSince(started)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            Console.out(String(decoding: try encoder.encode(result), as: UTF8.self) + "\n")
        } else {
            Console.out(Self.summary(result, items: items.count, policy: policy.name, workers: workers,
                                     seconds: elapsed))
        }
    }

    /// Every item `serve` lists in SOURCE, in its order: facts from the file's transcode plan, costs from the
    /// profile (by the item's name there, else estimated by size). An item whose plan cannot be made fails on the
    /// server as it would live.
    func servedItems(profile: ServeCosts) throws -> [ServedItem] {
        let served = try ServedFolder(folder: source, order: sort.order, rendition: rendition, mediaPolicy: mediaPolicy,
                                      command: "simulate serve", unlisted: "not listed by serve, not simulated")
        defer { served.close() }
        let configuration = served.configuration
        return served.items.map { entry, name in
            do {
                let file = try MediaFile(path: entry.source, options: configuration.openOptions)
                let plan = try Transcoder(file: file, settings: configuration.settings).plan
                let costs = profile.item(named: name, width: plan.displayWidth, height: plan.displayHeight,
                                         duration: plan.duration)
                return ServedItem(
                    name: name, renditions: plan.renditions.map { .init(name: $0.name, width: $0.width, height: $0.height) },
                    segmentStarts: (0..<plan.segmentCount).map { plan.grid.start($0) }, duration: plan.duration,
                    manifest: .init(costs.manifest), poster: .init(costs.poster),
                    firstSegment: .init(costs.firstSegment), segment: .init(costs.segment))
            } catch {
                Console.error("\(Console.safe(name)): \(Console.describe(error)) (its jobs fail, as on the server)")
                let costs = profile.estimate(width: 1, height: 1, duration: 1)
                var item = ServedItem(name: name, renditions: [], segmentStarts: [0], duration: 1,
                                      manifest: .init(costs.manifest), poster: .init(costs.poster),
                                      firstSegment: .init(costs.firstSegment), segment: .init(costs.segment))
                item.fails = true
                return item
            }
        }
    }

    static func summary(_ r: ServeSimulation.Result, items: Int, policy: String, workers: Int, seconds: Double) -> String {
        func ms(_ s: ServeSimulation.Spread) -> String { String(format: "p50 %.0f ms, p95 %.0f ms (%d)", s.p50, s.p95, s.count) }
        return """
        \(r.perViewer.count) viewers, \(r.moves) moves over \(items) items, policy \(policy), \(workers) workers, \
        \(String(format: "%.0f", r.seconds)) virtual s in \(String(format: "%.2f", seconds)) s
          first frame      \(ms(r.firstFrameMs))
            hit            \(ms(r.firstFrameMsHit))
            miss (cold)    \(ms(r.firstFrameMsMiss))
          hit rate         \(String(format: "%.3f", r.hitRate))
          card             \(ms(r.cardMs))
          poster           \(ms(r.posterMs))
          stalls           \(r.stalls), unfinished moves \(r.unfinished), errors \(r.errors)
          jobs             \(r.jobs), CPU use \(String(format: "%.0f %%", r.cpuUse * 100)), peak queue \(r.peakQueue)

        """
    }
}

extension ServedItem.Cost {
    /// A cost measured by calibration.
    init(_ cost: ServeCosts.Cost) { self.init(wall: cost.wall, cpu: cost.cpu) }
}
