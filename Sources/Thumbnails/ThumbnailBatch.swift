import Batch
import Feed
import Foundation
import Media
import EngineSupport

/// Renders the thumbnails of a whole feed in one process, `jobs` items at a time, each with a time limit, and keeps
/// one card per item in `cards.jsonl`; a failing item is recorded in its card and the batch goes on.
///
/// The one batch engine (``BatchEngine``) runs it — incremental, resumable, sharded, stoppable, every image and the
/// card file written atomically — with a ``ThumbnailMaker`` that renders one item and writes its images. An item
/// whose source stamp (``SourceStamp``) and options match its card, and whose images exist, is skipped.
public final class ThumbnailBatch: Sendable {
    /// How a batch runs.
    public struct Configuration: Sendable {
        /// The output folder.
        public var output: URL
        /// Frame choice and rendering.
        public var options: ThumbnailOptions
        /// Items rendered at the same time.
        public var jobs: Int
        /// Seconds one item may take before it is cancelled and recorded as failed; nil for no limit.
        public var timeLimit: Double?
        /// Redo every item, even unchanged ones.
        public var force: Bool
        /// The part of the feed this run covers.
        public var shard: Shard
        /// The open policy and limits for each item: ``OpenOptions/untrusted(streamInfo:)`` by default (2 GiB of
        /// decoded pictures, 3000 decoded frames, playlists refused); ``timeLimit`` also becomes the item's
        /// wall-clock limit and caps its open and read timeouts.
        public var openOptions: OpenOptions = .untrusted(streamInfo: .header)
        /// Whether the thumbnails and cards of items gone from the feed are removed. Set it to false when the feed
        /// may be incomplete — a listing with entries whose id could not be read (an item of the last run may be one
        /// of them) — and the gone items' outputs and cards are kept for a run over a complete feed.
        public var removesGone = true
        /// Ids whose outputs and cards are kept even when they are gone from the feed: entries of the listing that
        /// could not be read but whose id could (they are still in the listing, only broken today).
        public var keptIDs: Set<String> = []
        /// Whether a card keeps its source URL whole — user info and signed-URL secrets included — so that the
        /// card alone can fetch the item again. Off by default: cards are shared, logged and uploaded, so the source is
        /// recorded as ``Redaction/redacted(_:)`` shows it. Incremental runs match cards by public ID, source stamp
        /// (size and time, or ETag) and options, never by the source text, so redaction does not change what is skipped.
        public var recordsSourceSecrets = false

        /// A configuration with defaults: one job per core, 60 s per item, no force, the whole feed.
        public init(output: URL, options: ThumbnailOptions = ThumbnailOptions(),
                    jobs: Int = ProcessInfo.processInfo.activeProcessorCount, timeLimit: Double? = 60,
                    force: Bool = false, shard: Shard = .all) {
            self.output = output
            self.options = options
            self.jobs = max(1, jobs)
            self.timeLimit = timeLimit
            self.force = force
            self.shard = shard
        }

        /// What the engine needs of it.
        var settings: BatchSettings {
            BatchSettings(output: output, jobs: jobs, timeLimit: timeLimit, force: force, shard: shard,
                          openOptions: openOptions, removesGone: removesGone, keptIDs: keptIDs,
                          recordsSourceSecrets: recordsSourceSecrets)
        }
    }

    /// Progress after each item.
    public typealias Progress = BatchProgress
    /// What a batch did; ``BatchSummary/made`` is also ``BatchSummary/rendered``, the record file
    /// ``BatchSummary/cardFile``.
    public typealias Summary = BatchSummary<Error>

    /// The configuration.
    public let configuration: Configuration
    /// The engine that runs the batch, with this batch's maker.
    let engine: BatchEngine<ThumbnailMaker>
    /// The items of this shard, unique by `public_id`.
    public var items: [FeedItem] { engine.items }

    /// A batch over the items of `feed` that belong to `configuration.shard`.
    public init(feed: [FeedItem], configuration: Configuration) {
        self.configuration = configuration
        let maker = ThumbnailMaker(configuration: configuration,
                                   clashes: Self.outputClashes(feed.map(\.publicID), options: configuration.options))
        self.engine = BatchEngine(feed: feed, settings: configuration.settings, maker: maker)
    }

    /// Asks the batch to take no new items, from any thread (a signal handler's Dispatch source, say), before or
    /// while ``run(progress:)`` runs. The items in hand finish and are recorded; items not started are neither
    /// failures nor removed: their previous cards stay in the card file, so an incremental run does them next
    /// (``BatchSummary/notReached``). Outputs of items gone from the feed are removed as in any run. Cannot be
    /// undone: a stopped batch stays stopped.
    public func stop() { engine.stop() }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { engine.isStopped }

    /// Runs the batch to completion (or until ``stop()``) on `configuration.jobs` worker threads, blocking the caller
    /// (``BatchEngine/run(progress:)``).
    /// - Parameter progress: called after each item, from a worker thread.
    /// - Throws: ``MediaError`` only when the output folder or the card file cannot be written, or another run holds
    ///   the folder; item failures are in ``BatchSummary/failures``.
    public func run(progress: (@Sendable (Progress) -> Void)? = nil) throws -> Summary {
        try engine.run(progress: progress)
    }

    /// The items whose outputs clash with an earlier item's (``ThumbnailMaker/clashes``). Paths compare case-insensitively, as they would on a case-insensitive file system.
    static func outputClashes(_ ids: [String], options: ThumbnailOptions) -> [String: (other: String, path: String)] {
        var files: [String: String] = [:]    // lowercased output path → owner
        var folders: [String: String] = [:]  // lowercased folder an output needs → owner
        var clashes: [String: (other: String, path: String)] = [:]
        var seen = Set<String>()
        for id in ids where seen.insert(id).inserted {
            let paths = outputSuffixes(options).map { OutputPath.relative(for: id) + $0 }
            var needed: [String] = []
            for path in paths {
                let parts = path.split(separator: "/")
                needed += (1..<max(1, parts.count)).map { parts[0..<$0].joined(separator: "/").lowercased() }
            }
            let clash = paths.lazy.compactMap { path -> (String, String)? in
                let key = path.lowercased()
                if let owner = files[key] ?? folders[key] { return (owner, path) }
                return nil
            }.first ?? needed.lazy.compactMap { folder -> (String, String)? in
                files[folder].map { ($0, folder) }
            }.first
            if let (owner, path) = clash {
                clashes[id] = (owner, path)
                continue
            }
            for path in paths { files[path.lowercased()] = id }
            for folder in needed where folders[folder] == nil { folders[folder] = id }
        }
        return clashes
    }

    /// The file-name suffixes of one item's outputs: `.jpg`, then `.2.jpg`, `.3.jpg` … for further positions.
    static func outputSuffixes(_ options: ThumbnailOptions) -> [String] {
        let count = options.sheet == nil ? options.positions.count : 1
        return (0..<count).map { ($0 == 0 ? "" : ".\($0 + 1)") + "." + options.format.fileExtension }
    }
}

extension BatchSummary where Failure == ThumbnailBatch.Error {
    /// Items rendered successfully.
    public var rendered: Int { made }
    /// The card file written.
    public var cardFile: URL { recordFile }
}

extension ThumbnailBatch: BatchRunning {}
