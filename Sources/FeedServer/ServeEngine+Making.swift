import EngineSupport
import Feed
import Foundation
import Media
import Prefetch
import Thumbnails
import Transcode

/// What a job makes, and how it stays true to its source: a job's files go into the cache only if the source is the
/// version it was listed as both before the job opens it and after the job has made everything, so a source that is
/// truncated, replaced or removed while it is transcoded never leaves a file cached as final.
extension ServeEngine {
    /// What a job made, held (in memory, or in a work folder) until the source has been checked again.
    struct Made {
        /// Files to write, in order.
        var files: [File] = []
        /// A full run's folder, adopted whole.
        var work: WorkFolder?
        /// The manifest the job made.
        var manifest: ItemManifest?

        /// A file to write.
        struct File {
            var key: String
            var bytes: [UInt8]
            /// Written only when not cached yet (a manifest's first segments, a segment's init).
            var onlyIfMissing = false
            /// A first segment made with a manifest, counted in ``ServeMetrics`` when written (jobs count their own).
            var isFirstSegment = false
        }
    }

    /// Where a job is, for ``jobHooks``.
    enum JobPhase: Sendable {
        /// The source passed its first check and is about to be opened.
        case checked
        /// Everything is made; the source is about to be checked again before anything is stored.
        case made
    }

    /// For tests: a closure per engine (by `ObjectIdentifier`), called on the worker at each ``JobPhase`` of a job
    /// (a test changes the source there).
    static let jobHooks = Locked<[ObjectIdentifier: @Sendable (JobKey, JobPhase) -> Void]>([:])

    /// Makes `key`'s artifact from the item at `source` and stores it in the cache; the manifest when it made one.
    ///
    /// A local source is checked twice by its ``FileIdentity`` (device, inode, size, modification and change times,
    /// following links): before it is opened, when its stamp must still name the job's folder (the version listed),
    /// and after the job has made everything and before anything is stored, when it must be the same file unchanged.
    /// - Throws: ``Failure/gone(_:)`` for a source that changed or disappeared meanwhile; the job's errors.
    func makeChecked(_ key: JobKey, source path: String, token: CancellationToken) throws -> ItemManifest? {
        let local = path.hasPrefix("/")
        let hook = Self.jobHooks.withLock { $0[ObjectIdentifier(self)] }
        let before = local ? try listedIdentity(of: path, folder: key.folder) : nil
        hook?(key, .checked)
        let made = try makeUnstored(key, source: path, token: token)
        defer { made.work?.finish() }
        hook?(key, .made)
        if let before, FileIdentity(path: path) != before {
            throw Failure.gone("\(key.folder): the item changed while it was made")
        }
        try store(made, folder: key.folder)
        return made.manifest
    }

    /// The identity of the source at `path` now, which must be the version the listing named `folder` after.
    /// - Throws: ``Failure/gone(_:)`` when the file is missing or another version.
    private func listedIdentity(of path: String, folder: String) throws -> FileIdentity {
        // The folder's name ends in the hash of the listed stamp (``RenditionFolder``): the same hash of today's
        // stamp is the same version.
        let listed = folder.lastIndex(of: ".").map { folder[$0...] }
        guard let identity = FileIdentity(path: path), let listed,
              RenditionFolder.name(for: "x", stamp: identity.stamp, settings: configuration.settings).hasSuffix(listed)
        else {
            throw Failure.gone("\(folder): the item changed or was removed")
        }
        return identity
    }

    /// Stores what a job made: files written (or skipped when cached and allowed), then a work folder adopted.
    private func store(_ made: Made, folder: String) throws {
        for file in made.files where !(file.onlyIfMissing && cache.contains(file.key)) {
            try cache.write(file.key, file.bytes)
            if file.isFirstSegment { metrics.segmentsTranscoded.increment() }
        }
        if let work = made.work { try cache.adopt(work, into: folder) }
    }

    /// Makes `key`'s artifact without storing anything: bytes in memory, or a full run's files in a work folder.
    private func makeUnstored(_ key: JobKey, source path: String, token: CancellationToken) throws -> Made {
        var options = configuration.openOptions
        options.itemTimeLimit = configuration.jobTimeLimit
        let folder = key.folder
        var made = Made()
        if case .poster = key.artifact {
            var thumbnail = ThumbnailOptions(positions: [.seconds(0)],
                                             box: Size(width: configuration.posterWidth, height: 0))
            thumbnail.format = .jpeg
            thumbnail.quality = 85
            let rendered = try ThumbnailRenderer(options: thumbnail, openOptions: options, decoderThreads: 2)
                .render(path: path, cancellation: token)
            guard let image = rendered.images.first else {
                throw Failure.failed("\(path): no picture for a poster")
            }
            made.files.append(.init(key: ItemFile.poster.key(in: folder),
                                   bytes: try ImageEncoder(format: .jpeg, quality: 85).encode(image)))
            return made
        }
        let file = try MediaFile(path: path, options: options, cancellation: token)
        let transcoder = try Transcoder(file: file, settings: configuration.settings)
        let plan = transcoder.plan
        // A segment or init job is asked for by the renditions of the item's manifest: the source, opened again,
        // must plan the same ones (a probe that found another size would make other files, or none to index).
        switch key.artifact {
        case .segments:
            let names = plan.renditions.map(\.name)
            let expected = knownManifest(folder)?.plan.renditions.map(\.name) ?? names
            guard expected == names else {
                throw Failure.failed("\(folder): opened again, the source plans renditions \(names) "
                                     + "where its manifest has \(expected)")
            }
        case .segment(let r, _), .initialization(let r):
            let names = plan.renditions.map(\.name)
            let expected = knownManifest(folder)?.plan.renditions.map(\.name) ?? names
            guard plan.renditions.indices.contains(r), expected == names else {
                throw Failure.failed("\(folder): opened again, the source plans renditions \(names) "
                                     + "where its manifest has \(expected)")
            }
        default: break
        }
        switch key.artifact {
        case .manifest:
            // The ladder's inits and first segments from one pass over the item's first second (one decode for all
            // of them): the listing needs every codecs string, and viewers ask for first segments next. An AV1
            // rendition is listed with the codecs string its encoder will write (its level follows from the size
            // and frame rate its H.264 twin was encoded at) and made only when a viewer asks for it: its first
            // segment takes about twice the H.264 one's time (docs/benchmarks.md), which a cold listing cannot wait.
            let ladder = plan.renditions(of: .h264)
            var codecs = [String](repeating: "", count: plan.renditions.count)
            for (r, first) in zip(ladder, try transcoder.segments(0, renditions: ladder)) {
                codecs[r] = first.codecs
                let name = plan.renditions[r].name
                made.files.append(.init(key: ItemFile.initialization(rendition: name).key(in: folder),
                                        bytes: first.initialization, onlyIfMissing: true))
                made.files.append(.init(key: ItemFile.segment(rendition: name, index: 0).key(in: folder),
                                        bytes: first.media, onlyIfMissing: true, isFirstSegment: true))
            }
            for r in plan.renditions.indices where codecs[r].isEmpty {
                guard let listed = transcoder.listedCodecs(rendition: r) else {
                    throw Failure.failed("\(folder): no codecs string for rendition \(plan.renditions[r].name)")
                }
                codecs[r] = listed
            }
            let manifest = ItemManifest(plan: plan, codecs: codecs, origin: transcoder.origin)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            // Last: a manifest in the cache says the first segments are there.
            made.files.append(.init(key: ItemFile.manifest.key(in: folder), bytes: Array(try encoder.encode(manifest))))
            made.manifest = manifest
        case .initialization(let r):
            let initialization = try transcoder.initializationSegment(rendition: r)
            made.files.append(.init(key: ItemFile.initialization(rendition: plan.renditions[r].name).key(in: folder),
                                    bytes: initialization.bytes))
        case .segment(let r, let k):
            let name = plan.renditions[r].name
            let initKey = ItemFile.initialization(rendition: name).key(in: folder)
            // With the init in the cache and the manifest's origin, no pass over the item's start is needed.
            let initCached = cache.contains(initKey)
            let segment: TranscodedSegment
            do {
                segment = try transcoder.segments(k, renditions: [r],
                                                  origin: initCached ? knownManifest(folder)?.origin : nil)[0]
            } catch let error as MediaError where error.isPastEnd {
                // The plan, made again, ends before this segment (a manifest from before the source's end was
                // read), or the segment's span holds no picture.
                throw Self.pastEnd(item: key.folder, index: k, plan: plan)
            }
            if !segment.initialization.isEmpty {
                made.files.append(.init(key: initKey, bytes: segment.initialization, onlyIfMissing: true))
                // A pass from the start ran (an AV1 rendition the manifest did not make): keep what it learnt.
                if let learnt = transcoder.origin { rememberOrigin(learnt, folder: folder) }
            }
            made.files.append(.init(key: ItemFile.segment(rendition: name, index: k).key(in: folder), bytes: segment.media))
        case .segments(let k):
            // One pass for every rendition when the manifest's origin serves (it does once the manifest is made, and
            // its inits are cached with it), else one by one, each with its init.
            // The ladder's renditions (``ItemManifest/ladder``): an AV1 one is made only when asked for.
            let ladder = plan.renditions(of: .h264)
            let initsCached = ladder.allSatisfy {
                cache.contains(ItemFile.initialization(rendition: plan.renditions[$0].name).key(in: folder))
            }
            let all: [TranscodedSegment]
            do {
                all = try transcoder.segments(k, renditions: ladder,
                                              origin: initsCached ? knownManifest(folder)?.origin : nil)
            } catch let error as MediaError where error.isPastEnd {
                throw Self.pastEnd(item: key.folder, index: k, plan: plan)
            }
            for (r, segment) in zip(ladder, all) {
                let name = plan.renditions[r].name
                if !segment.initialization.isEmpty {
                    made.files.append(.init(key: ItemFile.initialization(rendition: name).key(in: folder),
                                            bytes: segment.initialization, onlyIfMissing: true))
                }
                made.files.append(.init(key: ItemFile.segment(rendition: name, index: k).key(in: folder),
                                        bytes: segment.media, onlyIfMissing: true))
            }
        case .full:
            let work = try cache.workFolder()
            made.work = work
            do {
                _ = try transcoder.run(into: work.url)
            } catch {
                work.finish()
                throw error
            }
        case .poster: break
        }
        return made
    }
}
