import Dispatch
import Feed
import Foundation
import Media
import Synchronization
import EngineSupport

/// Renders the thumbnails of a whole feed in one process: `jobs` items at a time, each with a time limit; a failing
/// item is recorded in its card and the batch goes on.
///
/// Incremental: an item whose source stamp (``SourceStamp``) and options match its card, and whose files exist, is
/// skipped (a URL item without version facts in the listing is checked with a `HEAD` request by its worker); thumbnails and cards of items gone from the feed (or this shard) are removed. Every image and the card
/// file are written atomically; the card file is rewritten whole at most about once a second while the batch runs
/// and at the end, so a killed batch leaves complete files and a rerun redoes only what has no card yet.
///
/// Workers are `jobs` dedicated serial Dispatch queues (each its own thread) taking item indices from an atomic
/// counter, so the blocking FFmpeg calls never occupy Swift's cooperative pool.
///
/// ``stop()`` asks a running batch to take no new items: the items in hand finish and are recorded, and the card file
/// is written as at the end of any run, with the previous cards of the items not reached kept for the next run.
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
    }

    /// Progress after each item.
    public struct Progress: Sendable {
        /// Items to render in this run (skipped ones excluded).
        public var total: Int
        /// Items finished so far.
        public var done: Int
        /// Of those, failed.
        public var failed: Int
        /// Seconds since the batch started.
        public var elapsed: Double
    }

    /// What a batch did.
    public struct Summary: Sendable {
        /// Items in this shard of the feed.
        public var items: Int
        /// Items rendered successfully (failed ones are in ``failures``; rendered + failed + skipped + notReached
        /// = items).
        public var rendered: Int
        /// Items skipped as unchanged.
        public var skipped: Int
        /// Items that failed, with why.
        public var failures: [Error]
        /// Items gone from the feed whose outputs were removed.
        public var removed: Int
        /// Items gone from the feed whose outputs were kept (``Configuration/removesGone`` off, or a kept id).
        public var keptGone: Int = 0
        /// The card file written.
        public var cardFile: URL
        /// Seconds the batch took.
        public var elapsed: Double
        /// Items not started because ``ThumbnailBatch/stop()`` was called: neither rendered nor failed, and their
        /// previous cards (if any) are kept, so the next run does them.
        public var notReached: Int = 0
    }

    /// The configuration.
    public let configuration: Configuration
    /// The items of this shard, unique by `public_id`.
    public let items: [FeedItem]
    /// Items whose output files would overwrite (or need a folder where there is a file of) an earlier item's in
    /// the whole feed — e.g. `a` with two positions writes `a.2.jpg`, which is also the file of an item `a.2` — and
    /// that earlier item's id. They fail with ``Error/outputClash(item:other:path:)``; the earlier item keeps its
    /// files. Worked out over the whole feed, so every shard agrees.
    let clashes: [String: (other: String, path: String)]
    /// Set by ``stop()``; the workers read it before taking each item.
    private let stopRequested = Atomic<Bool>(false)

    /// A batch over the items of `feed` that belong to `configuration.shard`.
    public init(feed: [FeedItem], configuration: Configuration) {
        self.configuration = configuration
        var seen = Set<String>()
        self.items = feed.filter { configuration.shard.contains($0.publicID) && seen.insert($0.publicID).inserted }
        self.clashes = Self.outputClashes(feed.map(\.publicID), options: configuration.options)
    }

    /// Asks the batch to take no new items, from any thread (a signal handler's Dispatch source, say), before or
    /// while ``run(progress:)`` runs. The items in hand finish and are recorded; items not started are neither
    /// failures nor removed: their previous cards stay in the card file, so an incremental run does them next
    /// (``Summary/notReached``). Outputs of items gone from the feed are removed as in any run. Cannot be undone:
    /// a stopped batch stays stopped.
    public func stop() {
        stopRequested.store(true, ordering: .sequentiallyConsistent)
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopRequested.load(ordering: .sequentiallyConsistent) }

    /// See ``clashes``. Paths compare case-insensitively, as they would on a case-insensitive file system.
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

    /// Runs the batch to completion (or until ``stop()``) on `configuration.jobs` worker threads, blocking the caller.
    /// - Parameter progress: called after each item, from a worker thread.
    /// - Throws: ``MediaError`` only when the output folder or the card file cannot be written; item failures are
    ///   in ``Summary/failures``.
    ///
    /// Tunes the process's allocator for opening one decoder after another (``AllocatorTuning/keepLargeBlocks()``).
    public func run(progress: (@Sendable (Progress) -> Void)? = nil) throws -> Summary {
        let started = DispatchTime.now()
        AllocatorTuning.keepLargeBlocks()
        let out = configuration.output
        do {
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        } catch {
            throw MediaError(.io, operation: "create folder", item: out.path, message: SystemErrorText.reason(error))
        }
        let cardURL = out.appendingPathComponent(configuration.shard.cardFileName)
        // No conflicting run at the same time: an unsharded run holds the folder alone, shards share it but each
        // holds its own card file. Held until this function returns (the kernel drops them if the process dies).
        let locks = try OutputLock.forRun(in: out, shard: configuration.shard)
        defer { locks.forEach { $0.release() } }
        // A run killed mid-write left temporary files behind (never a half-written output): clear them.
        AtomicFile.removeAbandonedTemporaries(in: out)
        let plan = BatchPlan(items: items, previous: CardFile.read(cardURL).cards, options: configuration.options,
                             force: configuration.force, output: out)
        let removesGone = configuration.removesGone
        let keptGone = plan.gone.filter { !removesGone || configuration.keptIDs.contains($0.publicID) }
        let removed = plan.gone.filter { removesGone && !configuration.keptIDs.contains($0.publicID) }
        for card in removed { removeOutputs(card.thumbnails, keeping: []) }
        let journal = RecordJournal(records: plan.kept + keptGone, file: cardURL, key: { $0.publicID },
                                    write: { try CardFile.write($0, to: $1) })
        try journal.flush()
        let flusher = journal.startPeriodicFlush()

        let nextIndex = Atomic<Int>(0)
        let lateSkips = Atomic<Int>(0)
        let failures = Locked<[Error]>([])
        let todo = plan.todo
        let group = DispatchGroup()
        for worker in 0..<min(configuration.jobs, max(1, todo.count)) {
            DispatchQueue(label: "ThumbnailBatch.worker.\(worker)", qos: .userInitiated).async(group: group) {
                // Every index taken is processed, so after a stop the items reached are exactly the first ones.
                while !self.isStopped {
                    let index = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < todo.count else { return }
                    let (item, previous) = todo[index]
                    let card = self.process(item, previous: previous)
                    if let failure = card.failure {
                        failures.withLock { $0.append(failure) }
                    }
                    if card.skipped { lateSkips.wrappingAdd(1, ordering: .relaxed) }
                    let done = journal.record(card.card)
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
        // Stopped: the items not reached keep their previous cards (and so their files stay listed), for the next run.
        let reached = min(nextIndex.load(ordering: .relaxed), todo.count)
        for (_, previous) in todo[reached...] {
            if let previous { journal.record(previous) }
        }
        try journal.flush()
        let skippedLate = lateSkips.load(ordering: .relaxed)
        let failed = failures.withLock { $0.count }
        return Summary(items: items.count, rendered: reached - skippedLate - failed,
                       skipped: plan.skippedCount + skippedLate,
                       failures: failures.withLock { $0 }.sorted { $0.description < $1.description },
                       removed: removed.count, keptGone: keptGone.count,
                       cardFile: cardURL, elapsed: Self.seconds(since: started), notReached: todo.count - reached)
    }

    /// Deletes `paths` (relative to the output folder, as a card lists them) that are not in `keeping`, refusing
    /// any that would leave it — by `..` or through a symbolic link (``OutputFolder/remove(_:)``): a forged card
    /// must not name a file to delete.
    func removeOutputs(_ paths: [String], keeping: [String]) {
        for path in paths where !keeping.contains(path) {
            try? folder.remove(path)
        }
    }

    /// The output folder, through which every write and delete goes.
    var folder: OutputFolder { OutputFolder(configuration.output) }

    static func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }
}
