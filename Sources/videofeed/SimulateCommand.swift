import ArgumentParser
import Feed
import Foundation
import PolicyLab
import Prefetch

/// `videofeed simulate`: PolicyLab — prefetch policies in virtual time, and `simulate calibrate` for cost profiles.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Compare prefetch policies in virtual time (PolicyLab), or calibrate costs on real decoding.",
        subcommands: [SimulateRunCommand.self, SimulateServeCommand.self, CalibrateCommand.self],
        defaultSubcommand: SimulateRunCommand.self
    )
}

/// `videofeed simulate [options]`: the comparison table.
struct SimulateRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Simulate policies over a swipe model or a trace and print a comparison table.",
        discussion: """
        Every policy faces the same session: swipes drawn from --model with --seed, or replayed from --trace. \
        Costs come from --costs (made by `videofeed simulate calibrate`) or the built-in profile. The same options \
        and seed always give the same numbers. See docs/policylab.md.
        """
    )

    @Option(help: "Comma-separated policies: window, forwardN (e.g. forward2), tiktokLike, staged, swipeAware.")
    var policies: String = "window,forward2,tiktokLike,staged,swipeAware"

    @Option(help: "Swipes drawn from the model (ignored with --trace).")
    var swipes: Int = 10_000

    @Option(help: "Seed of the swipe model and the item durations.")
    var seed: UInt64 = 1

    @Option(help: "Swipe model: mixed, patient or scroller, optionally with key=value overrides, e.g. \"scroller,back=0.1\".")
    var model: String = "mixed"

    @Option(help: "Replay a recorded session: CSV or JSON Lines of time and action (n, p, jN, index, end).")
    var trace: String?

    @Option(help: "Cost profile JSON from `videofeed simulate calibrate` (default: the built-in profile).")
    var costs: String?

    @Option(help: "Background prefetch workers, as FeedPlayer's (one more lane is kept for the current item).")
    var workers: Int = 2

    @Option(help: "CPU cores the workers share (default: --workers).")
    var cores: Int?

    @Option(name: .customLong("background-load"), help: "Other work on the machine: this many busy nice-0 threads compete for the cores.")
    var backgroundLoad: Double = 0

    @Option(help: "Memory budget for decoded frames, e.g. 256MiB; a comma-separated list sweeps budgets.")
    var budget = ByteCountList(.mebibytes(256))

    @Option(help: "Items in the feed (default: enough that the session never reaches the end).")
    var items: Int?

    @Flag(help: "Wrap around: after the last item comes the first.")
    var wrap = false

    @Option(help: "Remote items over a network of this bandwidth (e.g. 4Mbps) or a bandwidth trace file (seconds,rate).")
    var bandwidth: String?

    @Option(help: "Round-trip time with --bandwidth, e.g. 80ms.")
    var rtt: String = "80ms"

    @Option(help: "Bitrate of items without a size in the profile, with --bandwidth, e.g. 2Mbps.")
    var bitrate: String = "2Mbps"

    @Option(name: .customLong("export-trace"), help: "Also write the session as a CSV trace to this file.")
    var exportTrace: String?

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    @Flag(name: .customLong("swipe-log"), help: "With --json, list every swipe's outcome (item, hit, time to first frame).")
    var swipeLog = false

    @Flag(help: "Print CSV instead of a table.")
    var csv = false

    func validate() throws {
        if json && csv { throw ValidationError("give either --json or --csv") }
        try NumberRules.count(swipes, "--swipes", max: 10_000_000)
        try NumberRules.count(workers, "--workers", max: 1024)
        if let cores { try NumberRules.count(cores, "--cores", max: 1024) }
        if let items { try NumberRules.count(items, "--items", max: 10_000_000) }
        if !(backgroundLoad >= 0 && backgroundLoad <= 1024) { throw ValidationError("--background-load must be from 0 to 1024") }
    }

    func run() throws {
        do {
            let chosen = try PolicySimulator.policies(named: policies)
            let swipeModel = try SwipeModel.parse(model)
            let profile = try costs.map(CostProfile.load) ?? .builtIn
            var scenario: Scenario
            if let trace {
                let session = try SwipeTrace.load(path: trace)
                let length = items ?? session.highestIndex + 5
                scenario = Scenario(session: session, feedLength: length, wraps: wrap, costs: profile,
                                    durationModel: swipeModel, seed: seed)
            } else {
                scenario = .generated(model: swipeModel, swipes: swipes, seed: seed, feedLength: items, wraps: wrap,
                                      costs: profile)
            }
            scenario.workers = workers
            scenario.recordsSwipes = swipeLog
            scenario.cores = cores ?? workers
            scenario.backgroundLoad = backgroundLoad
            if let bandwidth {
                let schedule = FileManager.default.fileExists(atPath: bandwidth)
                    ? try BandwidthSchedule.load(path: bandwidth)
                    : BandwidthSchedule(constant: try NetworkModel.parseRate(bandwidth, option: "--bandwidth"))
                scenario.network = NetworkModel(
                    bandwidth: schedule, roundTrip: try NetworkModel.parseSeconds(rtt, option: "--rtt"),
                    bitrate: try NetworkModel.parseRate(bitrate, option: "--bitrate"))
            }
            if let exportTrace {
                do {
                    try SwipeTrace.text(of: scenario.session, format: .csv)
                        .write(toFile: exportTrace, atomically: true, encoding: .utf8)
                } catch {
                    Console.error("simulate: \(Console.safe(exportTrace)): cannot write the trace: "
                                  + SystemErrorText.reason(error))
                    throw ExitCode(ExitStatus.couldNotRun)
                }
            }
            var rows: [SimulationMetrics] = []
            for bytes in budget.values {
                scenario.budget = bytes.bytes
                rows += try PolicySimulator(scenario: scenario).compare(chosen)
            }
            let header = ComparisonTable.Header(
                model: trace.map { "trace \($0)" } ?? swipeModel.name, swipes: scenario.session.steps.count,
                seed: seed, costs: costs ?? "built-in", workers: scenario.workers, cores: scenario.cores,
                network: bandwidth.map { "\($0), rtt \(rtt)" } ?? "local files", backgroundLoad: backgroundLoad)
            if json {
                Console.out(try ComparisonTable.json(rows, header: header))
            } else if csv {
                Console.out(ComparisonTable.csv(rows))
            } else {
                Console.out(ComparisonTable.text(rows, header: header))
            }
        } catch let error as PolicyLabError {
            Console.error("simulate: \(Console.safe(error.description))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
    }
}
