import EngineSupport
import Feed
import Foundation
import Logging
import Media
import Prefetch
import Thumbnails
import Transcode

/// What the listing says of an item beyond the feed's own fields, learnt once per version and kept in the cache as
/// `<folder>/manifest.json`: the transcode plan and each rendition's codecs string (read from its encoder, which is
/// why the H.264 ladder's initialisation segments, and first media segments, are made with it; an AV1 rendition's
/// from the size and rate its H.264 twin was encoded at, ``Transcoder/listedCodecs(rendition:)``).
public struct ItemManifest: Sendable, Codable, Equatable {
    /// The plan: renditions, display size, duration, segments.
    public var plan: TranscodePlan
    /// RFC 6381 codecs per rendition, in the plan's order.
    public var codecs: [String]
    /// What the manifest's pass over the item's start learnt: later segments are made without that pass again
    /// (nil for a still, and in manifests from older builds).
    public var origin: TranscodeOrigin?

    /// Rendition `r`'s codecs string as the listing gives it: the manifest's; for a manifest without one, an H.264
    /// rendition's most general (`avc1.640028`) and an AV1 rendition's none (not listed).
    func listedCodecs(_ r: Int) -> String {
        if codecs.indices.contains(r) { return codecs[r] }
        return plan.renditions.indices.contains(r) && plan.renditions[r].videoCodec == .h264 ? "avc1.640028" : ""
    }

    /// The index of the rendition named `name`.
    public func rendition(named name: String) -> Int? { plan.renditions.firstIndex { $0.name == name } }

    /// The renditions a viewer that plays `codec` chooses among, in the plan's order (largest first): the item's
    /// renditions of that codec, or its H.264 ones when it has none (a server without the AV1 set, an AV1 viewer).
    public func renditions(playing codec: VideoCodec) -> [Int] {
        let own = plan.renditions(of: codec)
        return own.isEmpty ? plan.renditions(of: .h264) : own
    }

    /// The renditions made with the manifest (each one's init and first segment) and by a pass over every rendition
    /// (``Artifact/segments(index:)``): the H.264 ladder. An AV1 rendition is made only when asked for (its encoder
    /// is the slower), by a viewer that plays AV1.
    public var ladder: [Int] { renditions(playing: .h264) }

    /// The rendition a viewer with a `width`×`height` box plays among those of `codec`
    /// (``renditions(playing:)``): the smallest that covers the box in either dimension, else the largest. The page
    /// applies the same rule.
    public func rendition(forBox width: Int, _ height: Int, codec: VideoCodec = .h264) -> Int {
        rendition(forBox: width, height, within: nil, audio: 0, codec: codec)
    }

    /// The rendition for a `width`×`height` box (``rendition(forBox:_:codec:)``) on a network that affords
    /// `bandwidth` bits per second: that one, or the largest below it whose peak rate (its VBV cap plus `audio`)
    /// fits, else the smallest (``RenditionRule``, which the page's `pickRendition` mirrors).
    public func rendition(forBox width: Int, _ height: Int, within bandwidth: Int?, audio: Int,
                          codec: VideoCodec = .h264) -> Int {
        let family = renditions(playing: codec)
        let candidates = family.map { r in
            RenditionRule.Candidate(width: plan.renditions[r].width, height: plan.renditions[r].height,
                                    bitrate: plan.renditions[r].maxBitrate + audio)
        }
        return RenditionRule.forBox(candidates, width: width, height: height, within: bandwidth)
            .map { family[$0] } ?? 0
    }

    /// Each segment's length in seconds.
    public var segmentDurations: [Double] {
        let n = plan.segmentCount, grid = plan.grid
        return (0..<n).map { k in k == n - 1 ? max(0, plan.duration - grid.start(k)) : grid.end(k) - grid.start(k) }
    }
}

/// The server's engine: the catalog, the disk cache, the shared worker pool and what each job makes.
///
/// Every media file is made by FFmpeg through the same code as the batches — `Transcoder.segment`,
/// `Transcoder.initializationSegment`, `Transcoder.run` and `ThumbnailRenderer` — and stored in the cache at the
/// relative path `videofeed transcode` writes. Initialisation segments, media segments made alone and full-run files
/// are byte-identical to the batch's (one routine makes a segment in both, with one x264 thread per encoder).
public final class ServeEngine: Sendable {
    /// How the engine works.
    public struct Configuration: Sendable {
        /// The cache folder (shared by replicas).
        public var cache: URL
        /// The cache's size limit in bytes.
        public var cacheLimit: Int64 = 2 << 30
        /// Worker threads for all viewers together.
        public var workers: Int = ProcessInfo.processInfo.activeProcessorCount
        /// Seconds at most that a request waits behind an older request for an on-screen item that waits for the
        /// wide slot (``WorkPool/holdLimit``; 0: never held).
        public var holdLimit: Double = 1.5
        /// The transcode settings (the batch's defaults unless changed).
        public var settings = TranscodeSettings()
        /// How sources are opened (the batch's defences against hostile files).
        public var openOptions: OpenOptions = TranscodeBatch.defaultOpenOptions
        /// Seconds one job may take.
        public var jobTimeLimit: Double = 120
        /// The poster: the first frame, fitted in this width.
        public var posterWidth = 720

        /// The defaults, caching in `cache`.
        public init(cache: URL) { self.cache = cache }
    }

    /// A media request that cannot be answered with bytes.
    public enum Failure: Error, CustomStringConvertible {
        /// No such item or file.
        case notFound(String)
        /// An earlier version of an item, or an item whose source disappeared.
        case gone(String)
        /// The item cannot be made (its error names it).
        case failed(String)
        /// A media segment after the item's last: its index is at least the rendition's `segments` (an old listing,
        /// a guessed URL), or its span of the source holds no picture (the video ends before it). Answered 404 with
        /// `X-Segment-Count: <segments>`, which tells a player the item ended rather than failed.
        case pastEnd(String, segments: Int)

        /// The same failure with any absolute path in its text cut to its last component.
        var withoutPaths: Failure {
            switch self {
            case .notFound(let s): .notFound(ClientText.withoutPaths(s))
            case .gone(let s): .gone(ClientText.withoutPaths(s))
            case .failed(let s): .failed(ClientText.withoutPaths(s))
            case .pastEnd(let s, let n): .pastEnd(ClientText.withoutPaths(s), segments: n)
            }
        }

        public var description: String {
            switch self {
            case .notFound(let s): "not found: \(s)"
            case .gone(let s): "gone: \(s)"
            case .failed(let s): s
            case .pastEnd(let s, _): "past the end: \(s)"
            }
        }
    }

    public let configuration: Configuration
    public let cache: MediaCache
    public let metrics: ServeMetrics
    let catalog: ServedCatalog
    let pool: WorkPool
    /// What the engine keeps per listed item version, by folder: only for the catalog's current versions.
    private let items = Locked(Items())
    /// The streams native players read through HLS, for ``readAhead(folder:file:)``.
    let readers = Locked(Readers())

    /// Source paths (for the workers) and manifests, by folder. A retired folder's entries are dropped, and a
    /// manifest is only kept for a folder whose source is known, so both hold at most one entry per current item
    /// version however often sources change.
    struct Items {
        var sources: [String: String] = [:]
        var manifests: [String: ItemManifest] = [:]

        /// Keeps `manifest` for `folder` unless the folder was retired meanwhile.
        mutating func keep(_ manifest: ItemManifest, for folder: String) {
            if sources[folder] != nil { manifests[folder] = manifest }
        }
    }

    /// An engine serving `feed`. Each job's end goes to `logger` at debug level: what it made, how long it waited for
    /// a worker and ran, and whether a request or prefetch wanted it.
    /// - Throws: when the cache folder cannot be created.
    public init(feed: Feed, configuration: Configuration, metrics: ServeMetrics = ServeMetrics(),
                logger: Logger = Logger(label: "videofeed.serve")) throws {
        // A long-running server within a memory budget: decoded pictures and encoder buffers (megabytes each) go
        // back to the system when freed, instead of staying in glibc's per-thread heaps after each job.
        AllocatorTuning.returnLargeBlocks()
        self.configuration = configuration
        self.metrics = metrics
        let cache = try MediaCache(root: configuration.cache, limit: configuration.cacheLimit)
        self.cache = cache
        let items = self.items, readers = self.readers
        // The pool's perform closure (and the catalog's retire) needs the engine; it reaches it through a weak
        // reference filled at the end (a strong one would be a cycle: engine → pool → closure → engine, and the
        // engine would never be freed).
        let box = Locked(WeakEngine())
        catalog = ServedCatalog(feed: feed, settings: configuration.settings, onEntry: { entry in
            items.withLock { $0.sources[entry.folder] = entry.path }
        }, onRetire: { folder in
            items.withLock { $0.sources[folder] = nil; $0.manifests[folder] = nil }
            // Nobody can reach this version any more: its work stops and its files leave the cache.
            let engine = box.withLock { $0.engine }
            engine?.pool.withdraw(folder: folder, error: Failure.gone("\(folder): the item changed or was removed"))
            for reader in readers.withLock({ $0.forget(folder: folder) }) { engine?.pool.want(viewer: reader, [:]) }
            cache.removeFolder(folder)
        })
        pool = WorkPool(workers: configuration.workers, holdLimit: configuration.holdLimit, perform: { key, token in
            guard let engine = box.withLock({ $0.engine }) else { throw WorkPool.Cancelled() }
            try engine.make(key, token: token)
        }, report: { report in
            metrics.record(report.key, report.outcome)
            Self.log(report, to: logger)
        })
        box.withLock { $0.engine = self }
    }

    /// One debug line per job: `job <folder> <artifact> made|cancelled|failed ... queued 1.234s ran 0.567s request`.
    /// A failed job is logged at warning level whatever the level, once: clients read only its item and a short
    /// reason (``ClientText``), so the log is where its whole error is.
    private static func log(_ report: WorkPool.Report, to logger: Logger) {
        // A job for an item version that went (removed or replaced) ends as withdrawn, not as a fault.
        if case .failed(let error) = report.outcome, case .gone? = error as? Failure {
            logger.debug("job \(report.key) withdrawn: \(Redaction.redacted(String(describing: error)))")
            return
        }
        if case .failed(let error) = report.outcome, logger.logLevel > .debug {
            logger.warning("job \(report.key) failed: \(Redaction.redacted(String(describing: error)))")
        }
        guard logger.logLevel <= .debug else { return }
        let queued = String(format: "%.3f", report.queued)
        let who = report.requested ? "request" : "prefetch"
        switch report.outcome {
        case .made(let seconds):
            logger.debug("job \(report.key) made: queued \(queued)s ran \(String(format: "%.3f", seconds))s \(who)")
        case .cancelled:
            logger.debug("job \(report.key) cancelled: queued \(queued)s \(who)")
        case .failed(let error):
            let why = Redaction.redacted(String(describing: error))
            logger.debug("job \(report.key) failed: queued \(queued)s \(who): \(why)")
        }
    }

    /// The engine as the pool's workers reach it.
    private struct WeakEngine {
        weak var engine: ServeEngine?
    }

    /// Stops the workers.
    public func shutdown() { pool.shutdown() }

    // MARK: - Reading

    /// The manifest of `entry`, made (as the most urgent work) when neither memory nor the cache has it.
    /// - Throws: ``Failure/failed(_:)`` naming the item when it cannot be opened or planned.
    func manifest(for entry: ServedCatalog.Entry) async throws -> ItemManifest {
        if let known = knownManifest(entry.folder) { return known }
        if let bytes = open(ItemFile.manifest.key(in: entry.folder))?.readAll(),
           let manifest = try? JSONDecoder().decode(ItemManifest.self, from: Data(bytes)) {
            items.withLock { $0.keep(manifest, for: entry.folder) }
            return manifest
        }
        try await waitFor(JobKey(folder: entry.folder, artifact: .manifest), item: entry.item.publicID)
        guard let manifest = knownManifest(entry.folder) else {
            throw Failure.failed("\(entry.item.publicID): manifest not made")
        }
        return manifest
    }

    /// Whether the manifest of `folder` is made (in memory or in the cache): ``manifest(for:)`` answers without work.
    func hasManifest(_ folder: String) -> Bool {
        knownManifest(folder) != nil || cache.contains(ItemFile.manifest.key(in: folder))
    }

    /// The manifest of `folder` if it is known without work.
    func knownManifest(_ folder: String) -> ItemManifest? { items.withLock { $0.manifests[folder] } }

    /// Adds what a pass from the item's start learnt (``Transcoder/origin``) of renditions the manifest's origin lacks
    /// (an AV1 rendition, first made after the manifest) to the manifest kept in memory: that rendition's later
    /// segments are then made without the pass, as the ladder's are.
    func rememberOrigin(_ learnt: TranscodeOrigin, folder: String) {
        items.withLock { items in
            guard var manifest = items.manifests[folder], var origin = manifest.origin,
                  origin.display == learnt.display else { return }
            origin.firstPictureTimes.merge(learnt.firstPictureTimes) { kept, _ in kept }
            manifest.origin = origin
            items.manifests[folder] = manifest
        }
    }

    /// How many folders the engine keeps a source path and a manifest for.
    var itemsHeld: (sources: Int, manifests: Int) { items.withLock { ($0.sources.count, $0.manifests.count) } }

    /// The listed entry of `folder`, its local source checked again (a source that changed or disappeared retires
    /// the folder).
    /// - Throws: ``Failure/gone(_:)`` for a retired folder, ``Failure/notFound(_:)`` for one never listed.
    private func current(_ folder: String) async throws -> ServedCatalog.Entry {
        switch await catalog.lookup(folder: folder) {
        case .current(let entry): return entry
        case .retired: throw Failure.gone("\(folder): the item changed or was removed")
        case .unknown: throw Failure.notFound(folder)
        }
    }

    /// The open file `file` of the item in `folder` when it is in the cache, found without any work; nil when the
    /// file is not cached or the item's manifest is not in memory (then ``file(folder:file:)`` answers). The item's
    /// source is checked as for ``file(folder:file:)``, and the file must be one the item has.
    /// - Throws: ``Failure``.
    func cachedFile(folder: String, file: String) async throws -> CacheFile? {
        let entry = try await current(folder)
        if file == ItemFile.poster.path { return open(folder + "/" + file) }
        guard let manifest = knownManifest(entry.folder) else { return nil }
        guard artifact(for: file, manifest: manifest) != nil else {
            throw pastEnd(file, manifest: manifest, item: entry.item.publicID) ?? Failure.notFound("\(folder)/\(file)")
        }
        return open(folder + "/" + file)
    }

    /// The cached file `key`, open for reading, or nil.
    func open(_ key: String) -> CacheFile? { cache.openForReading(key).flatMap(CacheFile.init(fd:)) }

    /// The file `file` of the item in `folder` (a path under the batch layout), made now if needed, open for reading.
    /// - Throws: ``Failure``.
    func file(folder: String, file: String) async throws -> CacheFile {
        let entry = try await current(folder)
        if Self.isPlaylist(file) { return try await playlistFile(file, entry: entry) }
        // The poster is made from the source alone: a card listed before its manifest shows it at once.
        let artifact: Artifact
        if file == ItemFile.poster.path {
            artifact = .poster
        } else {
            let manifest = try await manifest(for: entry)
            guard let found = self.artifact(for: file, manifest: manifest) else {
                throw pastEnd(file, manifest: manifest, item: entry.item.publicID)
                    ?? Failure.notFound("\(folder)/\(file)")
            }
            // An AV1 rendition's init comes with its first segment (one encoder session for both; the page asks
            // for them together, the prefetch for the segment).
            if case .initialization(let r) = found, !manifest.ladder.contains(r) {
                artifact = .segment(rendition: r, index: 0)
            } else {
                artifact = found
            }
        }
        let key = folder + "/" + file
        // Made, or evicted between the job and the read by another replica's cache: try twice. A segment that a pass
        // over every rendition is making (``readAhead(folder:file:)``) comes from that pass.
        for _ in 0..<3 {
            if let opened = open(key) { return opened }
            if case .segment(let r, let k) = artifact, knownManifest(folder)?.ladder.contains(r) ?? true,
               pool.state(of: JobKey(folder: folder, artifact: .segments(index: k))) != nil {
                try await waitFor(JobKey(folder: folder, artifact: .segments(index: k)), item: entry.item.publicID)
                if let opened = open(key) { return opened }
            }
            try await waitFor(JobKey(folder: folder, artifact: artifact), item: entry.item.publicID)
        }
        throw Failure.failed("\(entry.item.publicID): \(file) could not be kept in the cache")
    }

    /// Waits for a job, turning its errors into ``Failure``s a client may read (naming `item`, never a server path:
    /// the pool's report logs the whole error); a job cancelled under a waiter that still waits is asked for again.
    func waitFor(_ key: JobKey, item: String) async throws {
        for _ in 0..<3 {
            do {
                try await pool.wait(key)
                return
            } catch is WorkPool.Cancelled {
                if Task.isCancelled { throw CancellationError() }
                continue
            } catch let failure as Failure {
                throw failure.withoutPaths
            } catch {
                throw Failure.failed(ClientText.reason(for: error, item: item))
            }
        }
        throw Failure.failed("\(item): cancelled")
    }

    /// The job that makes `file` (a path in the batch layout, ``ItemFile``) of an item with `manifest`; nil for no
    /// such file.
    func artifact(for file: String, manifest: ItemManifest) -> Artifact? {
        guard let item = ItemFile(path: file) else { return nil }
        let settings = configuration.settings
        switch item {
        case .manifest: return nil
        case .poster: return .poster
        case .preview, .previewWebP: return settings.preview == nil ? nil : .full
        // Written from the manifest (``playlist(_:manifest:)``): no media work of their own.
        case .masterPlaylist: return settings.makesSegments ? .manifest : nil
        case .mp4(let name): return settings.makesMP4 && manifest.rendition(named: name) != nil ? .full : nil
        case .initialization(let name): return manifest.rendition(named: name).map { .initialization(rendition: $0) }
        case .mediaPlaylist(let name):
            return settings.makesSegments && manifest.rendition(named: name) != nil ? .manifest : nil
        case .segment(let name, let k):
            guard let r = manifest.rendition(named: name), k < manifest.plan.segmentCount else { return nil }
            return .segment(rendition: r, index: k)
        }
    }

    /// ``Failure/pastEnd(_:segments:)`` when `file` is a media segment of one of the manifest's renditions whose
    /// index is at or after the rendition's segment count; nil for any other file.
    func pastEnd(_ file: String, manifest: ItemManifest, item: String) -> Failure? {
        guard case .segment(let name, let k)? = ItemFile(path: file), manifest.rendition(named: name) != nil,
              k >= manifest.plan.segmentCount else { return nil }
        return Self.pastEnd(item: item, index: k, plan: manifest.plan)
    }

    /// The failure of segment `index` of an item with `plan`, past its end.
    static func pastEnd(item: String, index: Int, plan: TranscodePlan) -> Failure {
        .pastEnd(String(format: "\(item): segment \(index) is past the end (the video ends at %.3f s, in segment %d)",
                        plan.duration, plan.segmentCount - 1), segments: plan.segmentCount)
    }

    /// The cache key of what `artifact` makes (for readiness checks); nil for jobs of many files.
    func cacheKey(folder: String, artifact: Artifact, manifest: ItemManifest) -> String? {
        switch artifact {
        case .manifest: return ItemFile.manifest.key(in: folder)
        case .poster: return ItemFile.poster.key(in: folder)
        case .initialization(let r): return ItemFile.initialization(rendition: manifest.plan.renditions[r].name).key(in: folder)
        case .segment(let r, let k):
            return ItemFile.segment(rendition: manifest.plan.renditions[r].name, index: k).key(in: folder)
        case .segments, .full: return nil
        }
    }

    // MARK: - Making (on worker threads)

    /// Makes `key`'s artifact and stores it in the cache, if the item's source stayed the listed version while it was
    /// made (``makeChecked(_:source:token:)``): a source changed meanwhile fails the job and caches nothing.
    func make(_ key: JobKey, token: CancellationToken) throws {
        // A folder whose source is not known was retired (removed or replaced) since the job was asked for.
        guard let path = items.withLock({ $0.sources[key.folder] }) else {
            throw Failure.gone("\(key.folder): the item changed or was removed")
        }
        if let manifest = try makeChecked(key, source: path, token: token) {
            items.withLock { $0.keep(manifest, for: key.folder) }
        }
    }
}
