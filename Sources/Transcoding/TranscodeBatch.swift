import Dispatch
import Feed
import Foundation
import Media
import Synchronization
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
/// Incremental and resumable: an item whose source stamp and settings match its record, and whose files exist, is
/// skipped; the record file is rewritten about once a second. Shards (``Shard``) run side by side on one folder.
///
/// ``stop()`` asks a running batch to take no new items: the items in hand finish and are recorded, and the record
/// file is written as at the end of any run, with the previous records of the items not reached kept for the next run.
public final class TranscodeBatch: Sendable {
    /// How a batch runs.
    public struct Configuration: Sendable {
        public var output: URL
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
    }

    /// The open options of a transcode batch: untrusted input's policy without the decode caps.
    public static var defaultOpenOptions: OpenOptions {
        var options = OpenOptions.untrusted(streamInfo: .header)
        options.maxDecodedFrames = nil
        options.maxDecodedBytes = nil
        return options
    }

    /// Progress after each item.
    public struct Progress: Sendable {
        public var total: Int
        public var done: Int
        public var failed: Int
        public var elapsed: Double
    }

    /// What a batch did.
    public struct Summary: Sendable {
        /// Items in this shard of the feed.
        public var items: Int
        /// Items transcoded successfully.
        public var transcoded: Int
        /// Items skipped as unchanged.
        public var skipped: Int
        /// Items that failed, with why.
        public var failures: [TranscodeError]
        /// Items gone from the feed whose outputs were removed, and kept.
        public var removed: Int
        public var keptGone: Int
        /// The record file written.
        public var recordFile: URL
        /// Seconds the batch took.
        public var elapsed: Double
        /// Items not started because ``TranscodeBatch/stop()`` was called: neither transcoded nor failed, and their
        /// previous records (and folders) are kept, so the next run does them.
        public var notReached: Int = 0
    }

    public let configuration: Configuration
    /// The items of this shard, unique by `public_id`.
    public let items: [FeedItem]

    /// Set by ``stop()``; the workers read it before taking each item.
    private let stopRequested = Atomic<Bool>(false)

    public init(feed: [FeedItem], configuration: Configuration) {
        self.configuration = configuration
        var seen = Set<String>()
        self.items = feed.filter { configuration.shard.contains($0.publicID) && seen.insert($0.publicID).inserted }
    }

    /// Asks the batch to take no new items, from any thread (a signal handler's Dispatch source, say), before or
    /// while ``run(progress:)`` runs. The items in hand finish and are recorded (an item's folder is whole or
    /// absent, as ever); items not started are neither failures nor removed: their previous records and folders
    /// stay, so an incremental run does them next (``Summary/notReached``). Outputs of items gone from the feed are
    /// removed as in any run. Cannot be undone: a stopped batch stays stopped.
    public func stop() {
        stopRequested.store(true, ordering: .sequentiallyConsistent)
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopRequested.load(ordering: .sequentiallyConsistent) }

    /// Runs the batch to completion (or until ``stop()``) on `configuration.jobs` worker threads, blocking the caller.
    /// - Throws: ``MediaError`` only when the output folder or the record file cannot be written, or another run
    ///   holds the folder; item failures are in ``Summary/failures``.
    public func run(progress: (@Sendable (Progress) -> Void)? = nil) throws -> Summary {
        let started = DispatchTime.now()
        AllocatorTuning.keepLargeBlocks()
        let out = configuration.output
        do {
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        } catch {
            throw MediaError(.io, operation: "create folder", item: out.path, message: SystemErrorText.reason(error))
        }
        let recordURL = out.appendingPathComponent(RenditionFile.name(for: configuration.shard))
        let locks = try OutputLock.forRun(in: out, shardFile: configuration.shard.count == 1 ? nil
                                            : RenditionFile.name(for: configuration.shard))
        defer { locks.forEach { $0.release() } }
        // Staging folders and temporary files of a killed run. An unsharded run holds the folder alone and clears
        // them all; a shard clears only its own items' (no other shard writes those, and this shard cannot run twice),
        // since other shards' writers may be alive in other pods or on other hosts, where their process ids mean
        // nothing here.
        if configuration.shard.count == 1 {
            AtomicFile.removeAbandonedTemporaries(in: out)
        } else {
            removeOwnTemporaries(in: out, recordFile: recordURL.lastPathComponent)
        }

        let previous = RenditionFile.read(recordURL).records
        var byID: [String: RenditionRecord] = [:]
        for record in previous { byID[record.publicID] = record }
        let current = Set(items.map(\.publicID))
        let gone = previous.filter { !current.contains($0.publicID) }
        let keptGone = gone.filter { !configuration.removesGone || configuration.keptIDs.contains($0.publicID) }
        let removed = gone.filter { configuration.removesGone && !configuration.keptIDs.contains($0.publicID) }
        var kept: [RenditionRecord] = []
        var pending: [(FeedItem, RenditionRecord?)] = []
        let fingerprint = configuration.settings.fingerprint
        for item in items {
            let record = byID[item.publicID]
            if !configuration.force, let record, isCurrent(record, stamp: SourceStamp(item: item),
                                                            fingerprint: fingerprint) {
                kept.append(record)
            } else {
                pending.append((item, record))
            }
        }
        let todo = pending
        let journal = RecordJournal(records: kept + keptGone + todo.compactMap(\.1), file: recordURL,
                                    key: { $0.publicID }, write: { try RenditionFile.write($0, to: $1) })
        try journal.flush()
        let flusher = journal.startPeriodicFlush()

        let nextIndex = Atomic<Int>(0)
        let lateSkips = Atomic<Int>(0)
        let failures = Locked<[TranscodeError]>([])
        let stale = Locked<[String]>(removed.compactMap(\.folder))
        let group = DispatchGroup()
        for worker in 0..<min(configuration.jobs, max(1, todo.count)) {
            DispatchQueue(label: "TranscodeBatch.worker.\(worker)", qos: .userInitiated).async(group: group) {
                // Every index taken is processed, so after a stop the items reached are exactly the first ones.
                while !self.isStopped {
                    let index = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < todo.count else { return }
                    let (item, previous) = todo[index]
                    let outcome = self.process(item, previous: previous)
                    if let failure = outcome.failure { failures.withLock { $0.append(failure) } }
                    if outcome.skipped { lateSkips.wrappingAdd(1, ordering: .relaxed) }
                    if outcome.failure == nil, let old = previous?.folder, old != outcome.record.folder {
                        stale.withLock { $0.append(old) }
                    }
                    let done = journal.record(outcome.record)
                    try? journal.flushIfDue()
                    if let progress {
                        let failed = failures.withLock { $0.count }
                        progress(Progress(total: todo.count, done: done, failed: failed,
                                          elapsed: Self.seconds(since: started)))
                    }
                }
            }
        }
        group.wait()
        flusher.cancel()
        // Items not reached after a stop already have their previous records in the journal (it starts with them).
        let reached = min(nextIndex.load(ordering: .relaxed), todo.count)
        try journal.flush()
        // Only now does no record name them: remove old versions and gone items.
        let folder = OutputFolder(out)
        for path in stale.withLock({ $0 }) { try? folder.removeFolder(path) }
        let failed = failures.withLock { $0 }
        let skippedLate = lateSkips.load(ordering: .relaxed)
        return Summary(items: items.count, transcoded: reached - skippedLate - failed.count,
                       skipped: kept.count + skippedLate, failures: failed.sorted { $0.description < $1.description },
                       removed: removed.count, keptGone: keptGone.count, recordFile: recordURL,
                       elapsed: Self.seconds(since: started), notReached: todo.count - reached)
    }

    /// Removes this shard's leftovers: its items' staging folders (`.<name>.<version>.tmp-<pid>-<n>`) and its record
    /// file's temporary files.
    func removeOwnTemporaries(in out: URL, recordFile: String) {
        let folder = OutputFolder(out)
        var byFolder: [String: [String]] = [:]
        for item in items {
            let relative = OutputPath.relative(for: item.publicID)
            let parent = (relative as NSString).deletingLastPathComponent
            byFolder[parent, default: []].append((relative as NSString).lastPathComponent)
        }
        byFolder[""] = (byFolder[""] ?? [])
        for (parent, names) in byFolder {
            let directory = parent.isEmpty ? out : out.appendingPathComponent(parent)
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
            let patterns = names.map { "^\\." + NSRegularExpression.escapedPattern(for: $0) + "\\.[0-9a-f]{8}\\.tmp-[0-9]+-[0-9]+$" }
                + (parent.isEmpty ? ["^\\." + NSRegularExpression.escapedPattern(for: recordFile) + "\\.tmp-[0-9]+-[0-9]+$"] : [])
            let expressions = patterns.compactMap { try? NSRegularExpression(pattern: $0) }
            for entry in entries where entry.hasPrefix(".") {
                let range = NSRange(entry.startIndex..., in: entry)
                guard expressions.contains(where: { $0.firstMatch(in: entry, range: range) != nil }) else { continue }
                try? folder.removeFolder(parent.isEmpty ? entry : parent + "/" + entry)
            }
        }
    }

    /// Whether `record` was made from this version of the source with these settings and its files are all there.
    func isCurrent(_ record: RenditionRecord, stamp: SourceStamp, fingerprint: String) -> Bool {
        let folder = OutputFolder(configuration.output)
        return record.status == .ok && record.settings == fingerprint
            && stamp.matches(size: record.sourceSize, mtime: record.sourceMtime, etag: record.sourceEtag)
            && record.paths.allSatisfy { folder.contains($0) }
    }

    static func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }
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
