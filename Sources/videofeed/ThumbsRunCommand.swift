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
    @OptionGroup var batch: BatchOptions

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

    @Option(help: "One contact sheet of CxR tiles per item instead of single thumbnails.")
    var sheet: String?

    @Flag(help: "With --sheet, draw each tile's time in its corner.")
    var timestamps = false

    func validate() throws {
        if FramePosition.parseList(at) == nil {
            throw ValidationError("--at takes 10%, 3.5s (at most \(Int(FramePosition.maxSeconds)) s) or auto, or a "
                                  + "comma-separated list of them.")
        }
        if ImageFormat(name: format) == nil || format.lowercased() == "ppm" {
            throw ValidationError("--format takes jpg, png or webp.")
        }
        if !(1...100).contains(quality) { throw ValidationError("--quality must be 1-100.") }
        if let sheet, SheetLayout(parsing: sheet) == nil { throw ValidationError("--sheet takes CxR, e.g. 4x4.") }
        try watchOptions.check(shard: try batch.resolvedShard())
    }

    func run() throws {
        let options = ThumbnailOptions(
            positions: FramePosition.parseList(at) ?? [], box: size ?? Size(width: 320, height: 0),
            square: square, format: ImageFormat(name: format) ?? .jpeg, quality: quality,
            sheet: sheet.flatMap { SheetLayout(parsing: $0) }, exact: exact,
            timestamps: timestamps)
        let shard = try batch.resolvedShard()
        let cardFile = batch.output.appendingPathComponent(shard.cardFileName)
        let job = BatchJob(command: "thumbs", allowEmptyFeed: batch.allowEmptyFeed, quiet: batch.quiet,
                           previousCount: { CardFile.read(cardFile).cards.count },
                           pass: { page, stop in try pass(page, options: options, shard: shard, stop: stop) })
        try job.run(feedSource, format: batch.feedFormat?.feedFormat, options: watchOptions)
    }

    /// One batch over `page`: renders, reports, and returns whether an item or a listing entry failed.
    private func pass(_ page: FeedPage, options: ThumbnailOptions, shard: Shard, stop: WatchStop?) throws -> Bool {
        var configuration = ThumbnailBatch.Configuration(
            output: batch.output, options: options, jobs: batch.jobs, timeLimit: batch.timeLimit ?? 60,
            force: batch.force, shard: shard)
        batch.configure(&configuration, page: page, policy: policy, secrets: sourceSecrets)
        return try BatchCommandSupport.pass(ThumbnailBatch(feed: page.items, configuration: configuration), "thumbs",
                                            words: .init(made: "rendered", records: "cards"), page: page,
                                            options: batch, stop: stop)
    }
}
