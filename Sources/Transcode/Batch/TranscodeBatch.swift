import Batch
import Feed
import Foundation
import Media
import EngineSupport

/// Transcodes a whole feed in one process, `jobs` items at a time: each item into the feed renditions, segments,
/// playlists and preview of ``TranscodeSettings``, recorded in `renditions.jsonl`; a failing item is recorded as
/// failed and the batch goes on.
///
/// Atomic per item: an item is made in a hidden staging folder next to its final one and renamed into place whole,
/// so a player never fetches a half-made item, and a killed run leaves only a staging folder that the next run
/// removes. An item's folder name carries a digest of its source version and settings (`clip.3fa9c2d1/`), so every
/// URL under it is immutable: a new version is a new folder, and the old one is removed only after the record file
/// points at the new one.
///
/// The one batch engine (``BatchEngine``) runs it — incremental, resumable, sharded, stoppable, the record file
/// rewritten whole and atomically about once a second — with a ``TranscodeMaker`` that transcodes one item. An item
/// whose source stamp and settings match its record, and whose files exist, is skipped.
public final class TranscodeBatch: Sendable {
    /// How a batch runs.
    public struct Configuration: Sendable {
        /// The output folder.
        public var output: URL
        /// What each item is made into.
        public var settings: TranscodeSettings
        /// Items transcoded at the same time.
        public var jobs: Int
        /// Seconds one item may take before it is cancelled and recorded as failed; nil for no limit.
        public var timeLimit: Double?
        /// Redo every item, even unchanged ones.
        public var force: Bool
        /// The part of the feed this run covers.
        public var shard: Shard
        /// The open policy and limits: ``OpenOptions/untrusted(streamInfo:)`` with the decoded-frame and byte caps
        /// lifted (a transcode decodes every frame; ``timeLimit`` bounds the work instead).
        public var openOptions: OpenOptions = TranscodeBatch.defaultOpenOptions
        /// Whether outputs of items gone from the feed are removed (off when the listing may be incomplete).
        public var removesGone = true
        /// Ids whose outputs are kept even when gone from the feed.
        public var keptIDs: Set<String> = []
        /// Whether a record keeps its source URL whole — user info and signed-URL secrets included — so that the
        /// record alone can fetch the item again. Off by default: records are shared, logged and uploaded, so the source is
        /// recorded as ``Redaction/redacted(_:)`` shows it. Incremental runs match records by public ID, source stamp
        /// (size and time, or ETag) and settings, never by the source text, so redaction does not change what is skipped.
        public var recordsSourceSecrets = false

        /// A configuration with defaults: one job per core, 600 s per item, no force, the whole feed.
        public init(output: URL, settings: TranscodeSettings = TranscodeSettings(),
                    jobs: Int = ProcessInfo.processInfo.activeProcessorCount, timeLimit: Double? = 600,
                    force: Bool = false, shard: Shard = .all) {
            self.output = output
            self.settings = settings
            self.jobs = max(1, jobs)
            self.timeLimit = timeLimit
            self.force = force
            self.shard = shard
        }

        /// What the engine needs of it.
        var batchSettings: BatchSettings {
            BatchSettings(output: output, jobs: jobs, timeLimit: timeLimit, force: force, shard: shard,
                          openOptions: openOptions, removesGone: removesGone, keptIDs: keptIDs,
                          recordsSourceSecrets: recordsSourceSecrets)
        }
    }

    /// The open options of a transcode batch: untrusted input's policy without the decode caps.
    public static var defaultOpenOptions: OpenOptions {
        var options = OpenOptions.untrusted(streamInfo: .header)
        options.maxDecodedFrames = nil
        options.maxDecodedBytes = nil
        return options
    }

    /// Progress after each item.
    public typealias Progress = BatchProgress
    /// What a batch did; ``BatchSummary/made`` is also ``BatchSummary/transcoded``.
    public typealias Summary = BatchSummary<TranscodeError>

    /// The configuration.
    public let configuration: Configuration
    /// The engine that runs the batch, with this batch's maker.
    let engine: BatchEngine<TranscodeMaker>
    /// The items of this shard, unique by `public_id`.
    public var items: [FeedItem] { engine.items }

    /// A batch over the items of `feed` that belong to `configuration.shard`.
    public init(feed: [FeedItem], configuration: Configuration) {
        self.configuration = configuration
        self.engine = BatchEngine(feed: feed, settings: configuration.batchSettings,
                                  maker: TranscodeMaker(configuration: configuration))
    }

    /// Asks the batch to take no new items, from any thread (a signal handler's Dispatch source, say), before or
    /// while ``run(progress:)`` runs. The items in hand finish and are recorded (an item's folder is whole or
    /// absent, as ever); items not started are neither failures nor removed: their previous records and folders
    /// stay, so an incremental run does them next (``BatchSummary/notReached``). Outputs of items gone from the feed
    /// are removed as in any run. Cannot be undone: a stopped batch stays stopped.
    public func stop() { engine.stop() }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { engine.isStopped }

    /// Runs the batch to completion (or until ``stop()``) on `configuration.jobs` worker threads, blocking the caller
    /// (``BatchEngine/run(progress:)``).
    /// - Throws: ``MediaError`` only when the output folder or the record file cannot be written, or another run
    ///   holds the folder; item failures are in ``BatchSummary/failures``.
    public func run(progress: (@Sendable (Progress) -> Void)? = nil) throws -> Summary {
        try engine.run(progress: progress)
    }
}

extension BatchSummary where Failure == TranscodeError {
    /// Items transcoded successfully.
    public var transcoded: Int { made }
}

/// Why one item of a transcode batch failed; it names the item.
public enum TranscodeError: Error, Sendable, CustomStringConvertible {
    /// Opening, decoding, encoding or writing failed.
    case failed(item: String, underlying: MediaError)
    /// The item took longer than the batch's time limit.
    case timedOut(item: String, seconds: Double)
    /// Its output would leave the output folder (a symbolic link planted there).
    case unsafeOutput(item: String, reason: String)

    public var item: String {
        switch self {
        case .failed(let item, _), .timedOut(let item, _), .unsafeOutput(let item, _): item
        }
    }

    public var description: String {
        switch self {
        case .failed(let item, let error): "\(item): \(error)"
        case .timedOut(let item, let seconds): "\(item): timed out after \(seconds) s"
        case .unsafeOutput(let item, let reason): "\(item): refused to write: \(reason)"
        }
    }
}

extension TranscodeBatch: BatchRunning {}
