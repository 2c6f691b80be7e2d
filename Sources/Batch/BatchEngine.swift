import Dispatch
import EngineSupport
import Feed
import Foundation
import Media
import Synchronization

/// How a batch runs, whatever it makes.
public struct BatchSettings: Sendable {
    /// The output folder.
    public var output: URL
    /// Items made at the same time.
    public var jobs: Int
    /// Seconds one item may take before it is cancelled and recorded as failed; nil for no limit.
    public var timeLimit: Double?
    /// Redo every item, even unchanged ones.
    public var force: Bool
    /// The part of the feed this run covers.
    public var shard: Shard
    /// The open policy and limits for each item; ``timeLimit`` also becomes the item's wall-clock limit and caps its
    /// open and read timeouts (``ItemDeadline``).
    public var openOptions: OpenOptions
    /// Whether the outputs and records of items gone from the feed are removed. Off when the feed may be incomplete
    /// (a listing with entries whose id could not be read): they are kept for a run over a complete feed.
    public var removesGone: Bool
    /// Ids whose outputs and records are kept even when gone from the feed (entries of the listing that could not be
    /// read but whose id could).
    public var keptIDs: Set<String>
    /// Whether a record keeps its source URL whole, secrets included; off: ``Redaction/redacted(_:)``.
    public var recordsSourceSecrets: Bool

    /// Settings with every item's outputs and records removed when it is gone, and sources recorded redacted.
    public init(output: URL, jobs: Int, timeLimit: Double?, force: Bool, shard: Shard, openOptions: OpenOptions,
                removesGone: Bool = true, keptIDs: Set<String> = [], recordsSourceSecrets: Bool = false) {
        self.output = output
        self.jobs = max(1, jobs)
        self.timeLimit = timeLimit
        self.force = force
        self.shard = shard
        self.openOptions = openOptions
        self.removesGone = removesGone
        self.keptIDs = keptIDs
        self.recordsSourceSecrets = recordsSourceSecrets
    }
}

/// Progress after each item.
public struct BatchProgress: Sendable {
    /// Items to make in this run (skipped ones excluded).
    public var total: Int
    /// Items finished so far.
    public var done: Int
    /// Of those, failed.
    public var failed: Int
    /// Seconds since the batch started.
    public var elapsed: Double

    /// Progress of `done` items of `total`, `failed` of them, `elapsed` seconds in.
    public init(total: Int, done: Int, failed: Int, elapsed: Double) {
        self.total = total
        self.done = done
        self.failed = failed
        self.elapsed = elapsed
    }
}

/// What a batch did.
public struct BatchSummary<Failure: Error & Sendable & CustomStringConvertible>: Sendable {
    /// Items in this shard of the feed.
    public var items: Int
    /// Items made successfully (made + failed + skipped + notReached = items).
    public var made: Int
    /// Items skipped as unchanged.
    public var skipped: Int
    /// Items that failed, with why, sorted by description.
    public var failures: [Failure]
    /// Items gone from the feed whose outputs were removed.
    public var removed: Int
    /// Items gone from the feed whose outputs were kept (``BatchSettings/removesGone`` off, or a kept id).
    public var keptGone: Int
    /// The record file written.
    public var recordFile: URL
    /// Seconds the batch took.
    public var elapsed: Double
    /// Items not started because ``BatchEngine/stop()`` was called: neither made nor failed; their previous records
    /// (and outputs) are kept, so the next run does them.
    public var notReached: Int
}

/// Runs a batch over a feed in one process, `jobs` items at a time, each under a time limit; a failing item is
/// recorded as failed and the batch goes on. What an item is and how it is made comes from a ``BatchMaker``.
///
/// - **Incremental**: an item whose record is current (a success made from its source version with this run's
///   ``BatchMaker/fingerprint``, every file it lists there) is skipped; a URL item
///   without version facts in the listing is checked with a `HEAD` request by its worker.
/// - **Resumable**: the record file starts with every record of the last run that still stands (those of the items
///   to redo included) and is rewritten whole and atomically about once a second (``RecordJournal``), so a killed
///   run loses at most a second of records and a rerun redoes only what has no current record.
/// - **Removal after the record file**: outputs of items gone from the feed, and outputs an item's new record no
///   longer names, are removed right after the first write of the record file that no longer names them (the start
///   flush for gone items, within about a second for a redone one), and never one that a record in this shard's file
///   names: a file is not missing while the record file lists it, nor removed when another item of the shard now
///   writes it.
/// - **Shards** (``Shard``) run side by side on one folder, on one machine or many sharing a volume: an unsharded run
///   holds the folder alone (``OutputLock``); a shard holds its own record file.
/// - **Temporaries**: a killed writer leaves `.<name>.tmp-<pid>-<n>` files and staging folders, never a half-written
///   output. An unsharded run removes those whose process is gone (``AtomicFile/removeAbandonedTemporaries(in:)``);
///   a shard removes only its own items' and its record file's, whatever their process id: other shards' writers may
///   be alive in other pods or on other hosts, where a process id means nothing here, and no other run writes a
///   shard's own items (the same shard cannot run twice at once).
///
/// Workers are `jobs` dedicated serial Dispatch queues (each its own thread) taking item indices from an atomic
/// counter, so the blocking FFmpeg calls never occupy Swift's cooperative pool.
///
/// ``stop()`` asks a running batch to take no new items: the items in hand finish and are recorded, and the record
/// file is written as at the end of any run, with the previous records of the items not reached kept.
public final class BatchEngine<Maker: BatchMaker>: Sendable {
    /// How the batch runs.
    public let settings: BatchSettings
    /// The items of this shard, unique by `public_id`.
    public let items: [FeedItem]
    /// How an item is made and recorded.
    public let maker: Maker
    /// Set by ``stop()``; the workers read it before taking each item.
    private let stopRequested = Atomic<Bool>(false)

    /// A batch over the items of `feed` that belong to `settings.shard`.
    public init(feed: [FeedItem], settings: BatchSettings, maker: Maker) {
        self.settings = settings
        self.maker = maker
        var seen = Set<String>()
        self.items = feed.filter { settings.shard.contains($0.publicID) && seen.insert($0.publicID).inserted }
    }

    /// Asks the batch to take no new items, from any thread (a signal handler's Dispatch source, say), before or
    /// while ``run(progress:)`` runs. Cannot be undone: a stopped batch stays stopped.
    public func stop() {
        stopRequested.store(true, ordering: .sequentiallyConsistent)
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopRequested.load(ordering: .sequentiallyConsistent) }

    /// The output folder, through which every write and delete goes.
    public var folder: OutputFolder { OutputFolder(settings.output) }

    /// Runs the batch to completion (or until ``stop()``) on `settings.jobs` worker threads, blocking the caller.
    /// Tunes the process's allocator for opening one decoder after another (``AllocatorTuning/keepLargeBlocks()``).
    /// - Parameter progress: called after each item, from a worker thread.
    /// - Throws: ``MediaError`` only when the output folder or the record file cannot be written, or another run
    ///   holds the folder; item failures are in ``BatchSummary/failures``.
    public func run(progress: (@Sendable (BatchProgress) -> Void)? = nil) throws -> BatchSummary<Maker.Failure> {
        let started = DispatchTime.now()
        AllocatorTuning.keepLargeBlocks()
        let out = settings.output
        do {
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        } catch {
            throw MediaError(.io, operation: "create folder", item: out.path, message: SystemErrorText.reason(error))
        }
        let recordName = maker.recordFileName(for: settings.shard)
        let recordURL = out.appendingPathComponent(recordName)
        // Held until this function returns (the kernel drops them if the process dies).
        let locks = try OutputLock.forRun(in: out, shardFile: settings.shard.count == 1 ? nil : recordName)
        defer { locks.forEach { $0.release() } }
        if settings.shard.count == 1 {
            AtomicFile.removeAbandonedTemporaries(in: out)
        } else {
            BatchTemporaries.removeOwn(in: folder, names: items.flatMap { maker.outputNames(of: $0.publicID) }
                                        + [.exactly(recordName)])
        }

        // The plan: records kept as they are, items to make (with their previous records), items gone.
        let previous = maker.readRecords(from: recordURL)
        var byID: [String: Maker.Record] = [:]
        for record in previous { byID[maker.id(of: record)] = record }
        let current = Set(items.map(\.publicID))
        let gone = previous.filter { !current.contains(maker.id(of: $0)) }
        let keeps = { (record: Maker.Record) in
            !self.settings.removesGone || self.settings.keptIDs.contains(self.maker.id(of: record))
        }
        let keptGone = gone.filter(keeps)
        let removed = gone.filter { !keeps($0) }
        var kept: [Maker.Record] = []
        var pending: [(FeedItem, Maker.Record?)] = []
        let folder = self.folder
        for item in items {
            let record = byID[item.publicID]
            if !settings.force, let record, isCurrent(record, stamp: SourceStamp(item: item)) {
                kept.append(record)
            } else {
                pending.append((item, record))
            }
        }
        let todo = pending
        // Outputs that their item's record named and may name no more: the gone items' now, the redone items' as
        // they finish. Each flush removes those the file it wrote no longer names (``removeUnnamed``).
        let stale = Locked<[StaleOutput]>(removed.flatMap { record in
            maker.outputs(of: record).map { StaleOutput(id: maker.id(of: record), path: $0) }
        })
        let journal = RecordJournal(records: kept + keptGone + todo.compactMap(\.1), file: recordURL,
                                    key: { [maker] in maker.id(of: $0) },
                                    write: { [maker, folder] records, url in
                                        try maker.writeRecords(records, to: url)
                                        Self.removeUnnamed(stale, written: records, maker: maker, folder: folder)
                                    })
        try journal.flush()
        let flusher = journal.startPeriodicFlush()

        let nextIndex = Atomic<Int>(0)
        let lateSkips = Atomic<Int>(0)
        let failures = Locked<[Maker.Failure]>([])
        let group = DispatchGroup()
        for worker in 0..<min(settings.jobs, max(1, todo.count)) {
            DispatchQueue(label: "BatchEngine.worker.\(worker)", qos: .userInitiated).async(group: group) {
                // Every index taken is processed, so after a stop the items reached are exactly the first ones.
                while !self.isStopped {
                    let index = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < todo.count else { return }
                    let (item, previous) = todo[index]
                    let (record, failure, skipped) = self.process(item, previous: previous)
                    if let failure { failures.withLock { $0.append(failure) } }
                    if skipped { lateSkips.wrappingAdd(1, ordering: .relaxed) }
                    let done = journal.record(record)
                    if let previous, !(failure.map { self.maker.keepsOutputs(of: previous, after: $0) } ?? false) {
                        let now = Set(self.maker.outputs(of: record))
                        let old = self.maker.outputs(of: previous).filter { !now.contains($0) }
                            .map { StaleOutput(id: item.publicID, path: $0) }
                        if !old.isEmpty { stale.withLock { $0 += old } }
                    }
                    try? journal.flushIfDue()
                    if let progress {
                        let failed = failures.withLock { $0.count }
                        progress(BatchProgress(total: todo.count, done: done, failed: failed,
                                               elapsed: Self.seconds(since: started)))
                    }
                }
            }
        }
        group.wait()
        flusher.cancel()
        // Items not reached after a stop already have their previous records in the journal (it starts with them).
        // The last flush writes every item's final record, so it removes every stale output left.
        let reached = min(nextIndex.load(ordering: .relaxed), todo.count)
        try journal.flush()
        let failed = failures.withLock { $0 }
        let skippedLate = lateSkips.load(ordering: .relaxed)
        return BatchSummary(items: items.count, made: reached - skippedLate - failed.count,
                            skipped: kept.count + skippedLate,
                            failures: failed.sorted { $0.description < $1.description },
                            removed: removed.count, keptGone: keptGone.count, recordFile: recordURL,
                            elapsed: Self.seconds(since: started), notReached: todo.count - reached)
    }

    /// An output that item `id`'s record named before this run.
    struct StaleOutput: Sendable {
        var id: String
        var path: String
    }

    /// Run after each write of the record file, with the records it holds: removes each stale output that no record
    /// in the file names, forgets those another item's record names now (its files today), and keeps for a later
    /// flush those that their own item's record in the file still names (the item's new record came after this
    /// snapshot). So a file is never missing while the record file names it, and at most the moment between a
    /// write and its removals can leave one that nothing names (the process killed right then). Paths compare
    /// case-insensitively, as output clashes do: on a case-insensitive volume `Clip.jpg` is `clip.jpg`.
    static func removeUnnamed(_ stale: Locked<[StaleOutput]>, written: [Maker.Record], maker: Maker,
                              folder: OutputFolder) {
        var byID: [String: Set<String>] = [:]
        var named = Set<String>()
        for record in written {
            let outputs = maker.outputs(of: record).map { $0.lowercased() }
            byID[maker.id(of: record)] = Set(outputs)
            named.formUnion(outputs)
        }
        let due: [String] = stale.withLock { list in
            var due: [String] = []
            list = list.filter { entry in
                let key = entry.path.lowercased()
                if byID[entry.id]?.contains(key) == true { return true }
                if !named.contains(key) { due.append(entry.path) }
                return false
            }
            return due
        }
        for path in due {
            switch maker.outputKind {
            case .files: try? folder.remove(path)
            case .folders: try? folder.removeFolder(path)
            }
        }
    }

    /// Whether `record` was made from this version of the source with this run's options and its files are all
    /// there: then its item is skipped.
    func isCurrent(_ record: Maker.Record, stamp: SourceStamp) -> Bool {
        let facts = maker.facts(of: record)
        let folder = self.folder
        return facts.ok && facts.fingerprint == maker.fingerprint
            && stamp.matches(size: facts.stamp.size, mtime: facts.stamp.mtime, etag: facts.stamp.etag)
            && facts.files.allSatisfy { folder.contains($0) }
    }

    /// One item: its version (a `HEAD` request for a URL the listing gave none), a skip when that version's record
    /// is current, else the maker under the item's deadline. Never throws.
    private func process(_ item: FeedItem, previous: Maker.Record?)
        -> (record: Maker.Record, failure: Maker.Failure?, skipped: Bool) {
        // The item's time limit counts from here, the version check included.
        let started = Date()
        let source = item.source.isFileURL ? item.source.path : item.source.absoluteString
        var stamp = SourceStamp(item: item)
        if stamp.needsRemoteCheck && !item.source.isFileURL {
            stamp.etag = RemoteStamp.fetch(item.source, timeout: min(settings.timeLimit ?? 15, 15))
            if !settings.force, let previous, isCurrent(previous, stamp: stamp) {
                return (previous, nil, true)
            }
        }
        let deadline = ItemDeadline(limit: settings.timeLimit, started: started, options: settings.openOptions)
        defer { deadline.finish() }
        let made = maker.make(BatchItem(
            item: item, stamp: stamp, started: started, deadline: deadline, timeLimit: settings.timeLimit,
            source: source, recordedSource: settings.recordsSourceSecrets ? source : Redaction.redacted(source),
            createdAt: ISO8601DateFormatter().string(from: item.createdAt)), previous: previous)
        return (made.record, made.failure, false)
    }

    static func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }
}

/// A batch a command runs and can stop: ``BatchEngine`` itself, or a kind of batch built on it.
public protocol BatchRunning: Sendable {
    /// Why one item failed.
    associatedtype Failure: Error & Sendable & CustomStringConvertible
    /// Asks the batch to take no new items.
    func stop()
    /// Runs the batch, blocking the caller; `progress` is called after each item.
    func run(progress: (@Sendable (BatchProgress) -> Void)?) throws -> BatchSummary<Failure>
}

extension BatchEngine: BatchRunning {
    /// Why one item failed: the maker's failure.
    public typealias Failure = Maker.Failure
}
