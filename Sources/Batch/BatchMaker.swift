import Feed
import Foundation
import Media

/// What one kind of batch supplies to ``BatchEngine``: how its records are kept and how one item is made. The
/// engine does everything else — the plan, shards, locks, temporaries, workers, the time limit, the record file,
/// removing what no record names any more, progress and the summary.
///
/// `thumbs` supplies thumbnails and cards (Thumbnails' `ThumbnailMaker`), `transcode` renditions and rendition
/// records (Transcode's `TranscodeMaker`).
public protocol BatchMaker: Sendable {
    /// One line of the record file: what the batch did for one item.
    associatedtype Record: Sendable
    /// Why one item failed; it names the item.
    associatedtype Failure: Error & Sendable & CustomStringConvertible

    /// The record file of `shard`, e.g. `cards.jsonl` or `cards-2-of-8.jsonl`.
    func recordFileName(for shard: Shard) -> String
    /// The records in the file at `url` (a missing file has none; lines that do not parse are skipped).
    func readRecords(from url: URL) -> [Record]
    /// Writes every record to `url`, whole and atomically.
    func writeRecords(_ records: [Record], to url: URL) throws
    /// A record's item id (`public_id`).
    func id(of record: Record) -> String

    /// Whether the item's outputs are files (removed with ``OutputFolder/remove(_:)``, which leaves a folder alone)
    /// or whole folders (``OutputFolder/removeFolder(_:)``).
    var outputKind: BatchOutputKind { get }
    /// The outputs `record` names, relative to the output folder: removed once no record names them (the item gone
    /// from the feed, or made again into other outputs).
    func outputs(of record: Record) -> [String]
    /// A digest of this run's options (``BatchRecordFacts/fingerprint``): a record made with others is redone.
    var fingerprint: String { get }
    /// What an incremental run compares in `record` (``BatchEngine``: the item is skipped when the record is a
    /// success made from the item's source version with this ``fingerprint`` and every file it lists is there).
    func facts(of record: Record) -> BatchRecordFacts
    /// The names an item's final outputs may have, for finding the temporaries a killed writer of it left.
    func outputNames(of publicID: String) -> [BatchOutputName]

    /// Makes one item under its deadline and returns its record; never throws: a failure is recorded in the record
    /// and returned beside it.
    func make(_ item: BatchItem, previous: Record?) -> (record: Record, failure: Failure?)
    /// Whether an item that failed with `failure` keeps the outputs its `previous` record named (they are not
    /// removed although its new record names none). False unless a maker says otherwise.
    func keepsOutputs(of previous: Record, after failure: Failure) -> Bool
}

extension BatchMaker {
    public func keepsOutputs(of previous: Record, after failure: Failure) -> Bool { false }
}

/// What an incremental run compares in a record.
public struct BatchRecordFacts: Sendable {
    /// Whether the item was made (not failed).
    public var ok: Bool
    /// The source version it was made from.
    public var stamp: SourceStamp
    /// The options fingerprint it was made with.
    public var fingerprint: String
    /// Every file it lists, relative to the output folder.
    public var files: [String]

    /// The facts of one record.
    public init(ok: Bool, stamp: SourceStamp, fingerprint: String, files: [String]) {
        self.ok = ok
        self.stamp = stamp
        self.fingerprint = fingerprint
        self.files = files
    }
}

/// Whether a batch's outputs are files or folders.
public enum BatchOutputKind: Sendable {
    /// Each output is a file: `clip.jpg`.
    case files
    /// Each output is a folder, made in staging and renamed whole: `clip.3fa9c2d1/`.
    case folders
}

/// The name an item's output may have: a folder below the output folder (empty for the output folder itself) and a
/// regular expression its last component matches whole. The temporaries of that output are
/// `.<name>.tmp-<pid>-<n>` in the same folder (``AtomicFile/temporaryPath(for:)``).
public struct BatchOutputName: Sendable, Hashable {
    /// The folder, relative to the output folder; empty for the output folder itself.
    public var folder: String
    /// A regular expression the output's name matches whole (no anchors).
    public var pattern: String

    /// The outputs in `folder` whose names match `pattern`.
    public init(folder: String, pattern: String) {
        self.folder = folder
        self.pattern = pattern
    }

    /// The output at `relative` (a path below the output folder), by its exact name.
    public static func exactly(_ relative: String) -> BatchOutputName {
        let name = (relative as NSString).lastPathComponent
        return BatchOutputName(folder: (relative as NSString).deletingLastPathComponent,
                               pattern: NSRegularExpression.escapedPattern(for: name))
    }
}

/// One item as the engine hands it to ``BatchMaker/make(_:previous:)``: the feed item, its source version, and its
/// deadline, already running.
public struct BatchItem {
    /// The feed item.
    public let item: FeedItem
    /// The source's version (a URL's `ETag` fetched with `HEAD` when the listing had none).
    public let stamp: SourceStamp
    /// When the item started (its version check included): its time limit counts from here.
    public let started: Date
    /// The item's clock: open the source with its ``ItemDeadline/options`` and ``ItemDeadline/token``.
    public let deadline: ItemDeadline
    /// The batch's time limit in seconds, or nil.
    public let timeLimit: Double?
    /// The source as a path (a file) or a URL's text.
    public let source: String
    /// The source as a record shows it: redacted unless the batch keeps secrets (``BatchSettings/recordsSourceSecrets``).
    public let recordedSource: String
    /// The item's creation date, ISO 8601.
    public let createdAt: String

    /// Whether `error` means this item ran out of time (``ItemDeadline/ranOut(_:limit:started:)``).
    public func ranOut(_ error: MediaError) -> Bool {
        deadline.ranOut(error, limit: timeLimit, started: started)
    }

    /// Seconds since the item started, to the millisecond.
    public var seconds: Double { (Date().timeIntervalSince(started) * 1000).rounded() / 1000 }
}
