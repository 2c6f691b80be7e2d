internal import CFFmpeg
import EngineSupport
import Foundation
import Media

/// Turns one opened item into feed renditions: H.264/AAC, upright, square pixels, fitted in the ladder's boxes, as
/// a fast-start MP4 and as CMAF segments with HLS playlists, plus a card preview (MP4 and animated WebP).
///
/// One decode feeds every output: the picture goes through one libavfilter graph (deinterlace, tone map, frame-rate
/// cap, then a split into one branch per rendition that scales, rotates and converts to yuv420p BT.709), each
/// branch into its own libx264 encoder; the audio is resampled to stereo once (libswresample), encoded once (AAC)
/// and muxed into every rendition. Segment *k* covers the plan's ``SegmentGrid`` span of the source (a short first
/// segment, then `s` each) and is its own encoder
/// session: the same seek, a filter graph and encoders built for it alone, whether it is made in a batch
/// (``run(into:)``, which makes every segment that way in turn) or alone on demand (``segments(_:renditions:origin:)``), so
/// both make the same bytes (on one machine with one FFmpeg/x264 build).
///
/// Not thread-safe, like ``MediaFile``: one call at a time. Cancel through the ``CancellationToken`` the file was
/// opened with: the next packet read or encoded frame stops the work with ``MediaError/Kind/cancelled``.
public final class Transcoder {
    /// The item.
    public let file: MediaFile
    /// The settings.
    public let settings: TranscodeSettings
    /// What will be made, from the file's header and where its video really ends (``MediaFile/videoEnd(stream:)``,
    /// read here: one group of pictures for an indexed MP4, the last megabytes of a TS).
    public let plan: TranscodePlan

    /// - Throws: ``MediaError`` from ``TranscodePlan/init(info:settings:item:videoEnd:fileSize:)`` and
    ///   ``MediaFile/videoEnd(stream:)`` (`cancelled`, `timedOut`).
    public init(file: MediaFile, settings: TranscodeSettings = TranscodeSettings()) throws {
        self.file = file
        self.settings = settings
        let header = try TranscodePlan(info: file.info, settings: settings, item: file.item)
        self.plan = header.isStill ? header : try TranscodePlan(
            info: file.info, settings: settings, item: file.item,
            videoEnd: file.videoEnd(stream: header.videoStream), fileSize: file.byteSize)
    }

    /// Makes every output into `folder` (created when missing): `<rendition>.mp4`, `<rendition>/init.mp4`,
    /// `<rendition>/seg-<k>.m4s`, `<rendition>/index.m3u8`, `master.m3u8`, `preview.mp4`, `preview.webp`. Each
    /// file appears whole or not at all (written under a temporary name, then renamed); on failure the files made
    /// so far stay, for the caller to discard with the folder.
    ///
    /// Segment by segment: segment *k* of every rendition is made exactly as ``segments(_:renditions:origin:)`` makes it
    /// alone (one seek, one filter graph, one encoder session per rendition for the plan's segment *k*), so a segment
    /// made on demand is byte-identical to this file. The fast-start MP4 of a rendition is the same encoded
    /// packets, muxed in a row; the previews are made by one more pass over their first seconds.
    /// - Throws: ``MediaError``: the file's decode errors, `invalidData` when no frame decodes, `io` when writing
    ///   fails, `cancelled`, `timedOut`.
    public func run(into folder: URL) throws -> TranscodeReport {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw MediaError(.io, operation: "create folder", item: folder.path, message: "\(error.localizedDescription)")
        }
        let batch = BatchFiles(folder: folder, settings: settings, renditions: plan.renditions)
        defer { batch.discardTemporaries() }
        // One decode through the item for every segment where that gives the pictures a seek would (ContinuousVideo);
        // without it (another codec, a second open that fails) each segment seeks as it does alone.
        let continuous = sharesVideoDecode && !plan.isStill && plan.segmentCount > 1
            ? try? ContinuousVideo.make(file: file, stream: plan.videoStream, threads: settings.threads) : nil
        for k in 0..<plan.segmentCount {
            let made: (pipeline: Pipeline, segments: [TranscodedSegment])
            do {
                made = try segments(k, rungs: Array(plan.renditions.indices), batch: batch, continuous: continuous)
            } catch let error as WindowError where k > 0 && error.windowFrames == 0 && error.error.kind == .invalidData {
                // The header promised more than the stream holds: the item ends with the segment before.
                break
            } catch let error as WindowError {
                throw error.error
            }
            try batch.add(made.segments, from: made.pipeline)
        }
        try batch.finishMP4s()
        if let preview = settings.preview {
            try rewind()
            let pipeline = try Pipeline(Pass(product: .previews(folder: folder),
                                             window: Pass.Window(start: 0, end: preview.seconds + 1, index: 0),
                                             source: .itemStart), of: self)
            try pipeline.runPreviews()
            batch.madePreviews = true
        }
        return try batch.report(plan: plan)
    }

    /// Media segment `index` of renditions `renditions` (indices into the plan, in the order wanted; all of them by
    /// default), each byte-identical to the batch's (``run(into:)``) and given with its RFC 6381 codecs string and,
    /// unless `origin` spares it, its rendition's initialisation segment. This is how a server makes what a viewer
    /// asks for on demand; the first segment of a cold item costs about as much as encoding its seconds.
    ///
    /// One pass (one decode, one filter graph split into every rendition) makes them together where it can:
    /// - segment 0 always: its pass starts at the item's start, and learns the ``origin`` a later segment needs;
    /// - a later segment when `origin` (an earlier transcoder's ``origin`` for the same file and settings) holds every
    ///   rendition asked for: the pass seeks to the keyframe before the segment and encodes only its span, and the
    ///   segments come without initialisation segments (`initialization` empty: the server keeps them from the
    ///   item's first pass).
    ///
    /// Otherwise (no origin, one without a rendition asked for, a still), each rendition's segment takes two passes
    /// of its own: the item's first frames, for its initialisation segment and what a later segment is fitted and
    /// timed by, then the segment's span.
    /// - Throws: ``MediaError``: `invalidArgument` for a rendition that does not exist or a segment past the plan's
    ///   last, `invalidData` for a segment whose span holds no picture (both past the end: ``MediaError/isPastEnd``);
    ///   the file's decode errors, `invalidData` when no frame decodes, `cancelled`, `timedOut`.
    public func segments(_ index: Int, renditions: [Int]? = nil, origin: TranscodeOrigin? = nil) throws
        -> [TranscodedSegment] {
        let rungs = renditions ?? Array(plan.renditions.indices)
        if let missing = rungs.first(where: { !plan.renditions.indices.contains($0) }) {
            throw MediaError(.invalidArgument, operation: "transcode", item: file.item,
                             message: "no rendition \(missing); this item has \(plan.renditions.count)")
        }
        guard !rungs.isEmpty else {
            throw MediaError(.invalidArgument, operation: "transcode", item: file.item, message: "no rendition asked for")
        }
        guard index >= 0 else {
            throw MediaError(.invalidArgument, operation: "transcode", item: file.item, message: "no segment \(index)")
        }
        guard index < plan.segmentCount else {
            throw MediaError(.invalidArgument, operation: MediaError.pastEndOperation, item: file.item,
                             message: "no segment \(index); this item has \(plan.segmentCount)")
        }
        if index == 0 { return try onePass(0, rungs: rungs) }
        if !plan.isStill, let origin,
           rungs.allSatisfy({ origin.firstPictureTimes[plan.renditions[$0].name] != nil }) {
            for name in rungs.map({ plan.renditions[$0].name }) {
                memory.firstPictureTime[name] = origin.firstPictureTimes[name]
            }
            memory.itemDisplay = origin.display
            var made = try onePass(index, rungs: rungs)
            for n in made.indices { made[n].initialization = [] }
            return made
        }
        return try rungs.map { rendition in
            // Cut mid-stream, the muxer writes its own edit lists; the rendition's one initialisation segment is
            // segment 0's. Made first: it also learns the item's first picture, whose shape sizes every segment.
            let initialization = try initializationSegment(rendition: rendition).bytes
            var segment = try onePass(index, rungs: [rendition])[0]
            segment.initialization = initialization
            return segment
        }
    }

    /// Segment `index` of `rungs` from one pass, its ``WindowError`` unwrapped; a later segment whose span holds no
    /// picture (the batch ends the item before it) is ``MediaError/isPastEnd``.
    private func onePass(_ index: Int, rungs: [Int]) throws -> [TranscodedSegment] {
        do {
            return try segments(index, rungs: rungs, batch: nil).segments
        } catch let error as WindowError where index > 0 && error.windowFrames == 0 && error.error.kind == .invalidData {
            throw MediaError(.invalidData, operation: MediaError.pastEndOperation, item: file.item,
                             message: "segment \(index) holds no picture: the video ends before it")
        } catch let error as WindowError {
            throw error.error
        }
    }

    /// The codecs string of AV1 rendition `rendition` without encoding it: from the pictures the encoder of its
    /// H.264 twin (the same box) was opened for by a pass so far, the string ``CodecString/av1(width:height:frameRate:)``
    /// gives (the level SVT-AV1 writes for that size and rate), with `,mp4a.40.2` when the item has audio. A server
    /// lists an AV1 rendition with it before making any AV1 (segment 0 of the H.264 ones); nil
    /// for an H.264 rendition, or before a pass opened its twin.
    public func listedCodecs(rendition: Int) -> String? {
        guard plan.renditions.indices.contains(rendition) else { return nil }
        let rung = plan.renditions[rendition]
        guard rung.videoCodec == .av1,
              let twin = plan.renditions.first(where: { $0.videoCodec == .h264 && $0.box == rung.box }),
              let pictures = memory.encodedPictures[twin.name] else { return nil }
        return CodecString.av1(width: pictures.width, height: pictures.height, frameRate: pictures.frameRate)
            + (plan.hasAudio ? "," + CodecString.aacLC : "")
    }

    /// What the passes so far learnt from the item's start (its first picture as shown, each rendition's first
    /// picture time), for ``segments(_:renditions:origin:)``; nil until a pass from the start ran
    /// (segment 0, ``initializationSegment(rendition:)``) and for a still.
    public var origin: TranscodeOrigin? {
        guard !plan.isStill, let display = memory.itemDisplay, !memory.firstPictureTime.isEmpty else { return nil }
        return TranscodeOrigin(display: display, firstPictureTimes: memory.firstPictureTime)
    }

    /// The CMAF initialisation segment of rendition `rendition` — byte for byte the `init.mp4` that
    /// ``run(into:)`` and ``segments(_:renditions:origin:)`` make with the same settings — from the item's first
    /// frames alone, with the rendition's RFC 6381 codecs string (`avc1.PPCCLL` or `av01…`, plus `,mp4a.40.2` with
    /// audio), as a server lists it before any media segment exists.
    /// - Throws: ``MediaError`` as ``segments(_:renditions:origin:)`` does.
    public func initializationSegment(rendition: Int) throws -> (bytes: [UInt8], codecs: String) {
        guard plan.renditions.indices.contains(rendition) else {
            throw MediaError(.invalidArgument, operation: "transcode", item: file.item,
                             message: "no rendition \(rendition); this item has \(plan.renditions.count)")
        }
        if used { try rewind() }
        used = true
        // The first frames of the video, and the first segment's audio: the audio track's edit list (an audio
        // start after the video's, an encoder delay) is written from the audio packets the fragment holds.
        let pipeline = try Pipeline(Pass(product: .initialization(rung: rendition),
                                         window: Pass.Window(start: 0, end: plan.grid.end(0), index: 0),
                                         source: .itemStart), of: self)
        let segment = try pipeline.runSegments()[0]
        return (segment.initialization, segment.codecs)
    }

    /// A ``MediaError`` of one segment's pipeline, with how many source frames it had in its window.
    private struct WindowError: Error {
        let error: MediaError
        let windowFrames: Int
    }

    /// Segment `k` of `rungs` by the one routine both the batch and ``segments(_:renditions:origin:)`` use: seek, decode the
    /// window, encode; from the item's start when the seek landed past the window's start.
    /// - Throws: ``WindowError``.
    private func segments(_ k: Int, rungs: [Int], batch: BatchFiles?, continuous: ContinuousVideo? = nil) throws
        -> (pipeline: Pipeline, segments: [TranscodedSegment]) {
        let grid = plan.grid
        // The last segment the header's duration promises takes whatever follows it: an MPEG-TS duration is an
        // estimate, and pictures past it are still the item's.
        let window = Pass.Window(start: grid.start(k), end: k == plan.segmentCount - 1 ? max(grid.end(k), 1e9)
                                    : grid.end(k), index: k)
        let product = Pass.Product.segments(rungs: rungs, batch: batch)
        if let continuous, continuous.isExact {
            // The video from the decoder that carried on through the segments before; the audio as alone.
            if used { try rewind() }
            used = true
            let before = continuous.decoder.framesDecoded
            let pipeline = try Pipeline(Pass(product: product, window: window, source: .continuing(continuous)),
                                        of: self)
            defer { framesDecoded += continuous.decoder.framesDecoded - before }
            do {
                return (pipeline, try pipeline.runSegments())
            } catch let error as MediaError {
                throw WindowError(error: error, windowFrames: pipeline.windowFrames)
            }
        }
        for fromStart in [false, true] {
            if used || fromStart { try rewind() }
            used = true
            let pipeline = try Pipeline(Pass(product: product, window: window, source: fromStart ? .itemStart : .seek),
                                        of: self)
            defer { framesDecoded += pipeline.video.framesDecoded }
            do {
                return (pipeline, try pipeline.runSegments())
            } catch is Pipeline.LandedPastWindow {
                continue
            } catch let error as MediaError {
                // Nothing decoded after the seek (no keyframe from where it landed to the end): from the start.
                if !fromStart, k > 0, pipeline.video.framesDecoded == 0, error.kind == .invalidData { continue }
                throw WindowError(error: error, windowFrames: pipeline.windowFrames)
            }
        }
        throw WindowError(error: MediaError(.invalidData, operation: "transcode", item: file.item,
                                            message: "segment \(k): no picture at its start"), windowFrames: 0)
    }

    /// Whether the file was read already (the next operation starts over from the beginning).
    private var used = false
    /// What the passes so far learnt of the item, handed to each pass after them.
    let memory = ItemMemory()
    /// Whether a window's preroll skips the pictures nothing refers to (`Pipeline.skipsPreroll`); off only in
    /// tests, which compare the bytes made both ways.
    var skipsPreroll: Bool {
        get { memory.skipsPreroll }
        set { memory.skipsPreroll = newValue }
    }
    /// Whether ``run(into:)`` decodes the video once through the item (``ContinuousVideo``) instead of from each
    /// segment's keyframe; off only in tests, which compare the bytes made both ways.
    var sharesVideoDecode = true
    /// Video frames decoded by the operations so far (skipped pictures are not decoded).
    private(set) var framesDecoded = 0
    /// Back to the item's first packet (``MediaFile/rewindToStart()``), so that every pass from the start reads
    /// what the first read.
    private func rewind() throws {
        try file.rewindToStart()
    }
}
