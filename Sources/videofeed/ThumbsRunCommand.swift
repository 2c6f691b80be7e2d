import ArgumentParser
import Feed
import Foundation
import Media
import Thumbnails

/// `videofeed thumbs [SOURCE] --out DIR …`: renders the thumbnails of a feed into OUT with OUT/cards.jsonl.
struct ThumbsRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Render thumbnails and cards for a feed (the default subcommand).",
        discussion: """
            Writes OUT/<public_id>.<ext> (further --at positions as OUT/<public_id>.2.<ext> …) and one JSON card per \
            item in OUT/cards.jsonl (OUT/cards-<i>-of-<n>.jsonl for a shard; join them with `videofeed thumbs \
            merge`). Unchanged items (same source size and mtime, or ETag for URLs, and same options) are skipped; \
            outputs of items gone from the feed are removed. The exit status is 1 if any item failed.
            --at takes 10% (of the duration), 3.5s, or auto (the most representative non-black keyframe), or a \
            comma-separated list of them. The shard index defaults to $JOB_COMPLETION_INDEX or \
            $SLURM_ARRAY_TASK_ID, the count to $SLURM_ARRAY_TASK_COUNT, when --shard is not given.
            With --watch the command stays up and runs again whenever the source changes (a file still being \
            written waits until it is complete); SIGTERM or SIGINT finishes the items in hand and exits 0.
            """
    )

    @OptionGroup var feedSource: FeedSourceOptions
    @OptionGroup var policy: MediaPolicyOptions
    @OptionGroup var sourceSecrets: SourceSecretsOption
    @OptionGroup var watchOptions: WatchOptions

    @Option(help: "The listing's shape: manifest, cloudinary, pexels or imagefeed. Default: detected.")
    var feedFormat: FeedFormatOption?

    @Option(help: "Output folder.")
    var out: String

    @Option(help: "Where to take each thumbnail: 10%, 3.5s, auto, or a list such as 10%,50%,90%.")
    var at: String = "10%"

    @Option(help: "Fit in WxH. Default: 320 wide, height by aspect. With --square, W is the side.")
    var size: Size?

    @Flag(help: "Crop the center square instead of fitting the whole picture.")
    var square = false

    @Flag(help: "Take the exact frame at or after each position instead of the keyframe at or before it (slower).")
    var exact = false

    @Option(help: "Image format: jpg, png or webp.")
    var format: String = "jpg"

    @Option(help: "JPEG and WebP quality, 1-100.")
    var quality: Int = 85

    @Option(help: "Items rendered at the same time. Default: the number of cores.")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: "One contact sheet of CxR tiles per item instead of single thumbnails.")
    var sheet: String?

    @Flag(help: "With --sheet, draw each tile's time in its corner.")
    var timestamps = false

    @Option(help: "Render only shard i of n (0-based), e.g. 2/8.")
    var shard: String?

    @Option(help: "Number of shards when the index comes from the environment.")
    var shardCount: Int?

    @Option(help: "Seconds one item may take before it is recorded as failed.")
    var timeLimit: Double = 60

    @Flag(help: "Redo every item, even unchanged ones.")
    var force = false

    @Flag(help: """
        Accept a feed with no valid item, or entries whose id cannot be read, and remove the outputs of every item \
        not in it. Without it such a run changes nothing (an empty or broken listing is more often a fault than a \
        feed that really emptied).
        """)
    var allowEmptyFeed = false

    @Flag(help: "Print the summary as JSON.")
    var json = false

    @Flag(name: [.short, .long], help: "No progress output.")
    var quiet = false

    func validate() throws {
        if FramePosition.parseList(at) == nil {
            throw ValidationError("--at takes 10%, 3.5s (at most \(Int(FramePosition.maxSeconds)) s) or auto, or a "
                                  + "comma-separated list of them.")
        }
        if ImageFormat(name: format) == nil || format.lowercased() == "ppm" {
            throw ValidationError("--format takes jpg, png or webp.")
        }
        if !(1...100).contains(quality) { throw ValidationError("--quality must be 1-100.") }
        try NumberRules.count(jobs, "--jobs", max: NumberRules.maxThreads)
        if let sheet, SheetLayout(parsing: sheet) == nil { throw ValidationError("--sheet takes CxR, e.g. 4x4.") }
        try NumberRules.timeLimit(timeLimit, "--time-limit")
        try watchOptions.check(shard: try resolvedShard())
    }

    func resolvedShard() throws -> Shard { try BatchCommandSupport.shard(shard, count: shardCount) }

    func run() throws {
        let options = ThumbnailOptions(
            positions: FramePosition.parseList(at) ?? [], box: size ?? Size(width: 320, height: 0),
            square: square, format: ImageFormat(name: format) ?? .jpeg, quality: quality,
            sheet: sheet.flatMap { SheetLayout(parsing: $0) }, exact: exact,
            timestamps: timestamps)
        let shard = try resolvedShard()
        let cardFile = URL(fileURLWithPath: out).appendingPathComponent(shard.cardFileName)
        let job = BatchJob(command: "thumbs", allowEmptyFeed: allowEmptyFeed, quiet: quiet,
                           previousCount: { CardFile.read(cardFile).cards.count },
                           pass: { page, stop in try pass(page, options: options, shard: shard, stop: stop) })
        try job.run(feedSource, format: feedFormat?.feedFormat, options: watchOptions)
    }

    /// One batch over `page`: renders, reports, and returns whether an item or a listing entry failed.
    private func pass(_ page: FeedPage, options: ThumbnailOptions, shard: Shard, stop: WatchStop?) throws -> Bool {
        var configuration = ThumbnailBatch.Configuration(
            output: URL(fileURLWithPath: out), options: options, jobs: jobs, timeLimit: timeLimit, force: force,
            shard: shard)
        configuration.openOptions = policy.applied(to: configuration.openOptions)
        configuration.recordsSourceSecrets = sourceSecrets.recordSourceSecrets
        (configuration.removesGone, configuration.keptIDs) = BatchCommandSupport.removal(page,
                                                                                     allowEmptyFeed: allowEmptyFeed)
        let batch = ThumbnailBatch(feed: page.items, configuration: configuration)
        let summary = try BatchCommandSupport.run("thumbs", quiet: quiet) { reporter in
            try WatchStop.during(stop, { batch.stop() }) { try batch.run { reporter.update($0) } }
        }
        for failure in summary.failures { Console.error("thumbs: \(Console.describe(failure))") }
        if summary.keptGone > 0 {
            Console.warning("thumbs: \(summary.keptGone) items of the last run are not in this feed; their thumbnails "
                            + "and cards are kept because they may be among the \(page.skipped.count) entries that "
                            + "could not be read (named above)")
        }
        Console.out(json ? try Self.json(summary) : Self.line(summary, out: out))
        // Invalid feed entries are items that failed too: a feed of nothing but invalid entries is not a success.
        return !summary.failures.isEmpty || !page.skipped.isEmpty
    }

    static func line(_ s: ThumbnailBatch.Summary, out: String) -> String {
        String(format: "thumbs: %d items, %d rendered, %d skipped, %d failed, %d removed%@, %.2f s; cards in %@\n",
               s.items, s.rendered, s.skipped, s.failures.count, s.removed,
               s.notReached > 0 ? ", \(s.notReached) not reached (stopped)" : "", s.elapsed,
               (out as NSString).appendingPathComponent(s.cardFile.lastPathComponent))
    }

    static func json(_ s: ThumbnailBatch.Summary) throws -> String {
        let object: [String: Any] = [
            "items": s.items, "rendered": s.rendered, "skipped": s.skipped, "failed": s.failures.count,
            "removed": s.removed, "not_reached": s.notReached, "seconds": s.elapsed, "cards": s.cardFile.path,
            "failures": s.failures.map(\.description),
        ]
        return try BatchCommandSupport.jsonLine(object)
    }
}
