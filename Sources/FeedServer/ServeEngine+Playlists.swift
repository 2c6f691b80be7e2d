import EngineSupport
import Foundation
import Media
import Prefetch
import Transcode

/// HLS for native players (AVPlayer, ExoPlayer, GStreamer, ffmpeg): an item's multivariant playlist and each
/// rendition's media playlist, written from its manifest alone as soon as the manifest exists, never after a full
/// run. They list the segments the page gets (`<rendition>/init.mp4`, `seg-<k>.m4s`, on the manifest's grid), which
/// are made on request; a player that has read a media playlist has its next segments made ahead (``readAhead``).
extension ServeEngine {
    /// Whether `file` (a path in the batch layout) is one of the playlists this engine writes from a manifest.
    static func isPlaylist(_ file: String) -> Bool {
        switch ItemFile(path: file) {
        case .masterPlaylist?, .mediaPlaylist?: true
        default: false
        }
    }

    /// The text of the playlist `file` of an item with `manifest`; nil when the item has no such playlist.
    ///
    /// The multivariant playlist lists the H.264 ladder largest first (players without a bandwidth estimate start
    /// with the first), then the AV1 set (`serve --codecs h264,av1`; a player picks it by its `CODECS`);
    /// `BANDWIDTH` is the rendition's VBV cap plus the audio rate (an AV1 rendition's twin's: the card's rule), no
    /// `AVERAGE-BANDWIDTH`: nothing is measured before the segments are made. A media playlist gives each
    /// segment's length on the manifest's grid, the last one to the item's end.
    func playlist(_ file: String, manifest: ItemManifest) -> String? {
        let plan = manifest.plan
        guard configuration.settings.makesSegments, !plan.renditions.isEmpty else { return nil }
        let item = ItemFile(path: file)
        if item == .masterPlaylist {
            let audio = plan.hasAudio ? configuration.settings.audioBitrate : 0
            return HLSPlaylist.multivariant(plan.renditions.enumerated().compactMap { r, rendition in
                let codecs = manifest.listedCodecs(r)
                guard !codecs.isEmpty else { return nil }
                return (uri: Card.encode(ItemFile.mediaPlaylist(rendition: rendition.name).path),
                        bandwidth: rendition.maxBitrate + audio,
                        averageBandwidth: 0, width: rendition.width, height: rendition.height, codecs: codecs)
            })
        }
        guard case .mediaPlaylist(let name)? = item, manifest.rendition(named: name) != nil else { return nil }
        let durations = manifest.segmentDurations
        return HLSPlaylist.media(initSegment: ItemFile.initialization(rendition: name).name,
                                 segments: durations.enumerated().map { k, seconds in
            (uri: ItemFile.segment(rendition: name, index: k).name, duration: max(0.001, seconds))
        })
    }

    /// The playlist `file` of the current item `entry`, from its manifest (made first if needed), kept in the cache
    /// beside the item's media and open for reading.
    /// - Throws: ``Failure``.
    func playlistFile(_ file: String, entry: ServedCatalog.Entry) async throws -> CacheFile {
        let key = entry.folder + "/" + file
        if let cached = open(key) { return cached }
        let manifest = try await manifest(for: entry)
        guard let text = playlist(file, manifest: manifest) else { throw Failure.notFound(key) }
        if !cache.contains(key) {
            do {
                try cache.write(key, Array(text.utf8))
            } catch {
                throw Failure.failed("\(entry.item.publicID): \(file) could not be kept in the cache")
            }
        }
        guard let opened = open(key) else {
            throw Failure.failed("\(entry.item.publicID): \(file) could not be kept in the cache")
        }
        return opened
    }

    // MARK: - Reading ahead for native players

    /// Segments made ahead of the last one a native player asked for.
    static let readAheadSegments = 2
    /// Streams (item version × rendition) read ahead for at once; the least recently asked is forgotten first.
    static let readAheadStreams = 64

    /// A native player asked for `file` of `folder`: a media playlist starts reading ahead on that rendition (its
    /// first segments; the second segment of every rendition in one pass once two renditions' playlists were read),
    /// a segment of a rendition whose playlist was read moves it on (the next ``readAheadSegments``). The page's requests (it never reads a media playlist) make nothing ahead: its
    /// WebSocket says where its viewer is (``ViewerHub``). The work is prefetch work on the shared pool, with the
    /// priority of a viewer's current item, dropped when the stream is forgotten.
    func readAhead(folder: String, file: String) {
        // A media playlist registers its stream and reads ahead from the start; a segment moves it on; any other file
        // is no read of a stream.
        let from: Int, name: String, registering: Bool
        switch ItemFile(path: file) {
        case .mediaPlaylist(let rendition)?: (from, name, registering) = (0, rendition, true)
        case .segment(let rendition, let k)?: (from, name, registering) = (k + 1, rendition, false)
        default: return
        }
        guard let manifest = knownManifest(folder), let r = manifest.rendition(named: name) else { return }
        let stream = name + "\u{0}" + folder
        let (viewer, forgotten) = readers.withLock { $0.viewer(for: stream, registering: registering) }
        if let forgotten { pool.want(viewer: forgotten, [:]) }
        guard let viewer else { return }
        if registering, manifest.ladder.contains(r), everyVariant(folder: folder, manifest: manifest) { return }
        var wants: [JobKey: Int] = [:]
        for k in from..<min(from + Self.readAheadSegments, manifest.plan.segmentCount) {
            let artifact = Artifact.segment(rendition: r, index: k)
            if let key = cacheKey(folder: folder, artifact: artifact, manifest: manifest), cache.contains(key) { continue }
            // Being made for every rendition of the ladder at once (the master playlist was read): that pass makes it.
            if manifest.ladder.contains(r), pool.state(of: JobKey(folder: folder, artifact: .segments(index: k))) != nil {
                continue
            }
            wants[JobKey(folder: folder, artifact: artifact)] = 1000 - (k - from)
        }
        pool.want(viewer: viewer, wants)
    }

    /// A player read the media playlists of two renditions or more of `folder` (ffmpeg's HLS demuxer opens every
    /// variant and reads two segments of each before its first picture): the second segment of every rendition of
    /// the H.264 ladder (``ItemManifest/ladder``; an AV1 one is made when asked for) is made in one pass (one decode for all of them) instead of one job per rendition, one after the other; the
    /// single-rendition read-ahead of its streams is dropped. A player that plays one variant (AVPlayer, ExoPlayer,
    /// GStreamer) keeps the single segment, made sooner. Returns whether it did.
    private func everyVariant(folder: String, manifest: ItemManifest) -> Bool {
        let ladder = Set(manifest.ladder.map { manifest.plan.renditions[$0].name })
        let streams = readers.withLock { $0.streams(of: folder, named: ladder) }
        guard streams.count >= 2, manifest.plan.segmentCount > 1, !manifest.plan.isStill else { return false }
        if manifest.ladder.allSatisfy({
            cache.contains(ItemFile.segment(rendition: manifest.plan.renditions[$0].name, index: 1).key(in: folder))
        }) {
            return false
        }
        for stream in streams { pool.want(viewer: stream, [:]) }
        let (viewer, forgotten) = readers.withLock { $0.viewer(for: "\u{0}" + folder, registering: true) }
        if let forgotten { pool.want(viewer: forgotten, [:]) }
        if let viewer { pool.want(viewer: viewer, [JobKey(folder: folder, artifact: .segments(index: 1)): 1000]) }
        return true
    }

    /// The streams native players read, each with the pool viewer id its read-ahead is wanted under (negative: the
    /// page's viewers count up from 1), least recently used first.
    struct Readers {
        private var ids: [String: Int] = [:]
        private var order: [String] = []
        private var counter = 0

        /// The viewer id of `stream` (a new one when `registering`), and the id of a stream forgotten to make room.
        mutating func viewer(for stream: String, registering: Bool) -> (viewer: Int?, forgotten: Int?) {
            if let id = ids[stream] {
                if let at = order.firstIndex(of: stream) { order.remove(at: at) }
                order.append(stream)
                return (id, nil)
            }
            guard registering else { return (nil, nil) }
            var forgotten: Int? = nil
            if order.count >= ServeEngine.readAheadStreams {
                let oldest = order.removeFirst()
                forgotten = ids.removeValue(forKey: oldest)
            }
            counter += 1
            ids[stream] = -counter
            order.append(stream)
            return (-counter, forgotten)
        }

        /// The viewer ids of the streams of `folder` of the renditions named in `names` (not the every-variant
        /// read-ahead's).
        func streams(of folder: String, named names: Set<String>) -> [Int] {
            ids.compactMap { key, id in
                guard key.hasSuffix("\u{0}" + folder), key != "\u{0}" + folder,
                      names.contains(String(key.prefix { $0 != "\u{0}" })) else { return nil }
                return id
            }
        }

        /// Forgets the streams of `folder` (retired), returning their viewer ids.
        mutating func forget(folder: String) -> [Int] {
            let gone = order.filter { $0.hasSuffix("\u{0}" + folder) }
            order.removeAll { gone.contains($0) }
            return gone.compactMap { ids.removeValue(forKey: $0) }
        }
    }
}
