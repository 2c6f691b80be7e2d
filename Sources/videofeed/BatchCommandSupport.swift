import ArgumentParser
import Batch
import Feed
import Foundation
import Media
import Thumbnails
import Transcode

/// What the batch commands (`thumbs`, `transcode`) share: reading the whole listing before the output folder is
/// touched, and which shard this run is.
enum BatchCommandSupport {
    /// The most pages a listing may have: 100,000 (tens of millions of items at the APIs' page sizes).
    static let maxPages = 100_000

    /// Loads every page of the listing, or exits 2 naming why (nothing in the output folder changed yet).
    static func loadListing(_ source: FeedSourceOptions, format: FeedFormat?, command: String) throws -> FeedPage {
        try listing(BlockingTask.run({
            try await source.makeLoader(format: format, for: .batch).loadAll(maxPages: maxPages)
        }), command: command)
    }

    /// The listing read (with its warnings and skipped entries printed), or exit 2 naming why it cannot be used
    /// (nothing in the output folder changed yet).
    static func listing(_ result: Result<FeedPage, any Error>, command: String) throws -> FeedPage {
        switch result {
        case .success(let loaded) where loaded.nextCursor != nil:
            // A listing cut short would make every item past the cut look gone, and their outputs be removed.
            Console.error("\(command): the listing has more than \(maxPages) pages; refusing to treat the rest as "
                          + "gone; nothing in the output folder was changed")
            throw ExitCode(ExitStatus.couldNotRun)
        case .success(let loaded):
            for warning in loaded.warnings { Console.warning("\(command): \(warning)") }
            for skipped in loaded.skipped {
                Console.error("\(command): skipped feed entry: \(Console.safe(skipped.description))")
            }
            return loaded
        case .failure(let error):
            Console.error("\(command): cannot read the feed: \(Console.describe(error)); nothing in the output "
                          + "folder was changed")
            throw ExitCode(ExitStatus.couldNotRun)
        }
    }

    /// `--shard`, else an index from the environment (`$JOB_COMPLETION_INDEX`, `$SLURM_ARRAY_TASK_ID`) with
    /// `--shard-count` (or `$SLURM_ARRAY_TASK_COUNT`), else the whole feed.
    static func shard(_ text: String?, count: Int?) throws -> Shard {
        if let text {
            guard let parsed = Shard(parsing: text) else {
                throw ValidationError("--shard takes i/n with 0 <= i < n <= \(Shard.maxCount), e.g. 2/8.")
            }
            return parsed
        }
        let env = ProcessInfo.processInfo.environment
        let count = count ?? env["SLURM_ARRAY_TASK_COUNT"].flatMap { Int($0) }
        guard let count, count > 1 else { return .all }
        guard let index = (env["JOB_COMPLETION_INDEX"] ?? env["SLURM_ARRAY_TASK_ID"]).flatMap({ Int($0) }),
              let parsed = Shard(index: index, count: count) else {
            throw ValidationError("--shard-count needs $JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID in 0..<count.")
        }
        return parsed
    }

    /// Whether the gone items' outputs may be removed, and the ids kept anyway: an invalid entry whose id is known
    /// keeps that id's outputs (it is still in the listing, only broken); one whose id could not be read might be
    /// any item of the last run, so then nothing gone is removed. A folder's entries are named by path: their id
    /// is the path without its extension.
    static func removal(_ page: FeedPage, allowEmptyFeed: Bool) -> (removesGone: Bool, keptIDs: Set<String>) {
        let removes = allowEmptyFeed || !page.skipped.contains { $0.id == nil }
        let kept: Set<String> = allowEmptyFeed ? [] : Set(page.skipped.compactMap(\.id).flatMap {
            [$0, ($0 as NSString).deletingPathExtension]
        })
        return (removes, kept)
    }

    /// An empty or wholly invalid listing (a schema change, a server bug) would remove every output of the last run:
    /// without `--allow-empty-feed` that ends the command with exit 2 before the output folder is touched.
    static func refuseEmptyListing(_ page: FeedPage, allowEmptyFeed: Bool, previousCount: () -> Int,
                                   command: String) throws {
        guard page.items.isEmpty && !allowEmptyFeed else { return }
        let previous = previousCount()
        guard previous > 0 else { return }
        Console.error("\(command): the feed has no valid items (\(page.skipped.count) entries skipped as invalid); "
                      + "refusing to remove the \(previous) items of the last run (--allow-empty-feed does); "
                      + "nothing in the output folder was changed")
        throw ExitCode(ExitStatus.couldNotRun)
    }

    /// Runs a batch with progress on stderr; a batch that cannot run (its folder, its record file, a lock) exits 2.
    static func run<Summary>(_ command: String, quiet: Bool,
                             _ body: (ProgressReporter) throws -> Summary) throws -> Summary {
        let reporter = ProgressReporter(enabled: !quiet, label: command)
        defer { reporter.finish() }
        do {
            return try body(reporter)
        } catch {
            reporter.finish()
            Console.error("\(command): \(Console.describe(error))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
    }

    /// One JSON object on a line, keys sorted.
    static func jsonLine(_ object: [String: Any]) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}

/// `--record-source-secrets`, shared by `thumbs` and `transcode`: whether cards and records keep a source URL whole.
struct SourceSecretsOption: ParsableArguments {
    @Flag(help: """
        Keep each source URL whole in the cards or records, user info and signed-URL secrets (X-Amz-Signature, \
        token, sig, ...) included, so that they alone can fetch the item again. Default: recorded redacted, as in \
        errors; incremental runs do not need the secrets.
        """)
    var recordSourceSecrets = false
}

/// The options every batch command (`thumbs`, `transcode`) takes: where, how many at once, which shard, how long an
/// item may take, and how it reports.
struct BatchOptions: ParsableArguments {
    @Option(help: "The listing's shape: manifest, cloudinary, pexels or imagefeed. Default: detected.")
    var feedFormat: FeedFormatOption?

    @Option(help: "Output folder.")
    var out: String

    @Option(help: "Items made at the same time. Default: the number of cores.")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: "Run only shard i of n (0-based), e.g. 2/8.")
    var shard: String?

    @Option(help: "Number of shards when the index comes from the environment.")
    var shardCount: Int?

    @Option(help: "Seconds one item may take before it is recorded as failed. Default: 60 for thumbs, 600 for transcode.")
    var timeLimit: Double?

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
        try NumberRules.count(jobs, "--jobs", max: NumberRules.maxThreads)
        if let timeLimit { try NumberRules.timeLimit(timeLimit, "--time-limit") }
        _ = try resolvedShard()
    }

    /// `--shard`, or the shard the environment names (``BatchCommandSupport/shard(_:count:)``).
    func resolvedShard() throws -> Shard { try BatchCommandSupport.shard(shard, count: shardCount) }

    /// The output folder.
    var output: URL { URL(fileURLWithPath: out) }

    /// Sets what every batch's configuration shares: the open policy, the source secrets and what a partial listing
    /// keeps.
    func configure<C: CommandBatchConfiguration>(_ configuration: inout C, page: FeedPage, policy: MediaPolicyOptions,
                                                secrets: SourceSecretsOption) {
        configuration.openOptions = policy.applied(to: configuration.openOptions)
        configuration.recordsSourceSecrets = secrets.recordSourceSecrets
        (configuration.removesGone, configuration.keptIDs) = BatchCommandSupport.removal(page,
                                                                                     allowEmptyFeed: allowEmptyFeed)
    }
}

/// What ``BatchOptions/configure(_:page:policy:secrets:)`` sets in a batch's configuration.
protocol CommandBatchConfiguration {
    var openOptions: OpenOptions { get set }
    var recordsSourceSecrets: Bool { get set }
    var removesGone: Bool { get set }
    var keptIDs: Set<String> { get set }
}

extension ThumbnailBatch.Configuration: CommandBatchConfiguration {}
extension TranscodeBatch.Configuration: CommandBatchConfiguration {}

extension BatchCommandSupport {
    /// What a command's summary calls its made items and its record file: `rendered` and `cards` for `thumbs`,
    /// `transcoded` and `records` for `transcode`.
    struct Words {
        var made: String
        var records: String
    }

    /// One batch over `page`: runs it under the watch's stop, reports it (failures on stderr, the summary on stdout)
    /// and returns whether an item or a listing entry failed.
    static func pass<B: BatchRunning>(_ batch: B, _ command: String, words: Words, page: FeedPage,
                                      options: BatchOptions, stop: WatchStop?) throws -> Bool {
        let summary = try run(command, quiet: options.quiet) { reporter in
            try WatchStop.during(stop, { batch.stop() }) { try batch.run { reporter.update($0) } }
        }
        for failure in summary.failures { Console.error("\(command): \(Console.describe(failure))") }
        if summary.keptGone > 0 {
            Console.warning("\(command): \(summary.keptGone) items of the last run are not in this feed; their "
                            + "outputs and \(words.records) are kept because they may be among the "
                            + "\(page.skipped.count) entries that could not be read (named above)")
        }
        Console.out(options.json ? try json(summary, words: words)
                        : line(summary, command, words: words, out: options.out))
        // Invalid feed entries are items that failed too: a feed of nothing but invalid entries is not a success.
        return !summary.failures.isEmpty || !page.skipped.isEmpty
    }

    /// `thumbs: 15 items, 15 rendered, 0 skipped, 0 failed, 0 removed, 0.31 s; cards in out/cards.jsonl`.
    static func line<F>(_ s: BatchSummary<F>, _ command: String, words: Words, out: String) -> String {
        String(format: "%@: %d items, %d %@, %d skipped, %d failed, %d removed%@, %.2f s; %@ in %@\n",
               command, s.items, s.made, words.made, s.skipped, s.failures.count, s.removed,
               s.notReached > 0 ? ", \(s.notReached) not reached (stopped)" : "", s.elapsed, words.records,
               (out as NSString).appendingPathComponent(s.recordFile.lastPathComponent))
    }

    /// The summary as one JSON object.
    static func json<F>(_ s: BatchSummary<F>, words: Words) throws -> String {
        let object: [String: Any] = [
            "items": s.items, words.made: s.made, "skipped": s.skipped, "failed": s.failures.count,
            "removed": s.removed, "not_reached": s.notReached, "seconds": s.elapsed, words.records: s.recordFile.path,
            "failures": s.failures.map(\.description),
        ]
        return try jsonLine(object)
    }
}
