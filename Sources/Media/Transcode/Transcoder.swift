internal import CFFmpeg
import Foundation

/// Turns one opened item into feed renditions: H.264/AAC, upright, square pixels, fitted in the ladder's boxes, as
/// a fast-start MP4 and as CMAF segments with HLS playlists, plus a card preview (MP4 and animated WebP).
///
/// One decode feeds every output: the picture goes through one libavfilter graph (deinterlace, tone map, frame-rate
/// cap, then a split into one branch per rendition that scales, rotates and converts to yuv420p BT.709), each
/// branch into its own libx264 encoder; the audio is resampled to stereo once (libswresample), encoded once (AAC)
/// and muxed into every rendition. Segment *k* covers the plan's ``SegmentGrid`` span of the source (a short first
/// segment, then `s` each) and is its own encoder
/// session: the same seek, a filter graph and encoders built for it alone, whether it is made in a batch
/// (``run(into:)``, which makes every segment that way in turn) or alone on demand (``segment(_:rendition:)``), so
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
    /// Segment by segment: segment *k* of every rendition is made exactly as ``segment(_:rendition:)`` makes it
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
            let pipeline = try Pipeline(transcoder: self, rungs: [], window: (0, preview.seconds + 1, 0),
                                        batch: batch, previewFolder: folder)
            try pipeline.runPreview()
            batch.madePreviews = true
        }
        return try batch.report(plan: plan)
    }

    /// Makes media segment `index` of rendition `rendition` alone: seeks to the keyframe before `index·s`, decodes
    /// up to `(index+1)·s` and encodes only that span, with an IDR picture first. The first segment of a cold item
    /// costs about as much as encoding its seconds.
    /// - Throws: ``MediaError`` `invalidArgument` for a segment or rendition that does not exist, and the errors of
    ///   ``run(into:)``.
    public func segment(_ index: Int, rendition: Int) throws -> TranscodedSegment {
        guard plan.renditions.indices.contains(rendition) else {
            throw MediaError(.invalidArgument, operation: "transcode", item: file.item,
                             message: "no rendition \(rendition); this item has \(plan.renditions.count)")
        }
        guard index >= 0 else {
            throw MediaError(.invalidArgument, operation: "transcode", item: file.item, message: "no segment \(index)")
        }
        guard index < plan.segmentCount else {
            throw MediaError(.invalidArgument, operation: MediaError.pastEndOperation, item: file.item,
                             message: "no segment \(index); this item has \(plan.segmentCount)")
        }
        // Cut mid-stream, the muxer writes its own edit lists; the rendition's one initialisation segment is
        // segment 0's. Made first: it also learns the item's first picture, whose shape sizes every segment.
        let initialization = index > 0 ? try self.initialization(rendition: rendition) : nil
        var segment = try alone(index, rendition: rendition)
        if let initialization { segment.initialization = initialization }
        return segment
    }

    /// Segment 0 of every rendition, in the plan's order, from one pass over the item's first seconds (one decode,
    /// one filter graph split into every rendition): each is byte-identical to ``segment(_:rendition:)``'s, its
    /// initialisation segment and codecs string included, and ``origin`` is learnt as by any pass from the start.
    /// A server that lists an item's renditions and then serves their first segments makes both with one decode
    /// instead of one per rendition plus one for the listing. With `renditions` (indices into the plan, in the order
    /// wanted), only those.
    /// - Throws: as ``segment(_:rendition:)``.
    public func firstSegments(renditions: [Int]? = nil) throws -> [TranscodedSegment] {
        let rungs = renditions ?? Array(plan.renditions.indices)
        guard rungs.allSatisfy(plan.renditions.indices.contains) else {
            throw MediaError(.invalidArgument, operation: "transcode", item: file.item,
                             message: "no such rendition; this item has \(plan.renditions.count)")
        }
        do {
            return try segments(0, rungs: rungs, batch: nil).segments
        } catch let error as WindowError {
            throw error.error
        }
    }

    /// Segment `index` of one rendition by the shared routine, its ``WindowError`` unwrapped; a later segment whose
    /// span holds no picture (the batch ends the item before it) is ``MediaError/isPastEnd``.
    private func alone(_ index: Int, rendition: Int) throws -> TranscodedSegment {
        do {
            return try segments(index, rungs: [rendition], batch: nil).segments[0]
        } catch let error as WindowError where index > 0 && error.windowFrames == 0 && error.error.kind == .invalidData {
            throw MediaError(.invalidData, operation: MediaError.pastEndOperation, item: file.item,
                             message: "segment \(index) holds no picture: the video ends before it")
        } catch let error as WindowError {
            throw error.error
        }
    }

    /// Media segment `index` of rendition `rendition`, byte-identical to ``segment(_:rendition:)``'s `media`, without
    /// the pass over the item's start that segment makes first for the rendition's initialisation segment: `origin`
    /// (an earlier transcoder's ``origin`` for the same file and settings) says what that pass learns. A server that
    /// keeps the initialisation segment and the origin from the item's first pass saves a decode, a filter graph and
    /// an encoder session per later segment.
    ///
    /// The returned segment's `initialization` is empty — unless the origin does not serve: for segment 0 (made from
    /// the start anyway), a still (made from its one picture) or an origin without this rendition, the segment is
    /// ``segment(_:rendition:)``'s, init included.
    /// - Throws: as ``segment(_:rendition:)``.
    public func mediaSegment(_ index: Int, rendition: Int, origin: TranscodeOrigin) throws -> TranscodedSegment {
        guard index > 0, index < plan.segmentCount, !plan.isStill, plan.renditions.indices.contains(rendition),
              let time = origin.firstPictureTimes[plan.renditions[rendition].name] else {
            return try segment(index, rendition: rendition)
        }
        itemDisplay = origin.display
        firstPictureTime[plan.renditions[rendition].name] = time
        var segment = try alone(index, rendition: rendition)
        segment.initialization = []
        return segment
    }

    /// Media segment `index` of every rendition, in the plan's order, from one pass (one decode, one filter graph
    /// split into every rendition), each byte-identical to ``mediaSegment(_:rendition:origin:)``'s, without
    /// initialisation segments; nil when the origin does not serve (segment 0, a still, an origin without every
    /// rendition): then make them one by one. A native HLS player that reads every variant before it plays (ffmpeg's
    /// demuxer) waits for one pass instead of one per rendition.
    /// With `renditions` (indices into the plan, in the order wanted), only those.
    /// - Throws: as ``segment(_:rendition:)``.
    public func mediaSegments(_ index: Int, origin: TranscodeOrigin, renditions: [Int]? = nil) throws
        -> [TranscodedSegment]? {
        let rungs = renditions ?? Array(plan.renditions.indices)
        guard index > 0, index < plan.segmentCount, !plan.isStill, !rungs.isEmpty,
              rungs.allSatisfy(plan.renditions.indices.contains) else { return nil }
        for rendition in rungs.map({ plan.renditions[$0] }) {
            guard let time = origin.firstPictureTimes[rendition.name] else { return nil }
            firstPictureTime[rendition.name] = time
        }
        itemDisplay = origin.display
        do {
            var made = try segments(index, rungs: rungs, batch: nil).segments
            for n in made.indices { made[n].initialization = [] }
            return made
        } catch let error as WindowError where error.windowFrames == 0 && error.error.kind == .invalidData {
            throw MediaError(.invalidData, operation: MediaError.pastEndOperation, item: file.item,
                             message: "segment \(index) holds no picture: the video ends before it")
        } catch let error as WindowError {
            throw error.error
        }
    }

    /// The codecs string of AV1 rendition `rendition` without encoding it: from the pictures the encoder of its
    /// H.264 twin (the same box) was opened for by a pass so far, the string ``CodecString/av1(width:height:frameRate:)``
    /// gives (the level SVT-AV1 writes for that size and rate), with `,mp4a.40.2` when the item has audio. A server
    /// lists an AV1 rendition with it before making any AV1 (``firstSegments(renditions:)`` of the H.264 ones); nil
    /// for an H.264 rendition, or before a pass opened its twin.
    public func listedCodecs(rendition: Int) -> String? {
        guard plan.renditions.indices.contains(rendition) else { return nil }
        let rung = plan.renditions[rendition]
        guard rung.videoCodec == .av1,
              let twin = plan.renditions.first(where: { $0.videoCodec == .h264 && $0.box == rung.box }),
              let pictures = encodedPictures[twin.name] else { return nil }
        return CodecString.av1(width: pictures.width, height: pictures.height, frameRate: pictures.frameRate)
            + (plan.hasAudio ? "," + CodecString.aacLC : "")
    }

    /// What the passes so far learnt from the item's start (its first picture as shown, each rendition's first
    /// picture time), for ``mediaSegment(_:rendition:origin:)``; nil until a pass from the start ran
    /// (``firstSegments(renditions:)``, ``initializationSegment(rendition:)``, segment 0) and for a still.
    public var origin: TranscodeOrigin? {
        guard !plan.isStill, let itemDisplay, !firstPictureTime.isEmpty else { return nil }
        return TranscodeOrigin(display: itemDisplay, firstPictureTimes: firstPictureTime)
    }

    /// The CMAF initialisation segment of rendition `rendition` — byte for byte the `init.mp4` that
    /// ``run(into:)`` and ``segment(_:rendition:)`` make with the same settings — from the item's first frame alone.
    /// - Throws: ``MediaError`` as ``segment(_:rendition:)`` does.
    public func initialization(rendition: Int) throws -> [UInt8] {
        try initializationSegment(rendition: rendition).bytes
    }

    /// ``initialization(rendition:)`` with the rendition's RFC 6381 codecs string (`avc1.PPCCLL`, plus
    /// `,mp4a.40.2` with audio), as a server lists it before any media segment exists.
    /// - Throws: ``MediaError`` as ``segment(_:rendition:)`` does.
    public func initializationSegment(rendition: Int) throws -> (bytes: [UInt8], codecs: String) {
        guard plan.renditions.indices.contains(rendition) else {
            throw MediaError(.invalidArgument, operation: "transcode", item: file.item,
                             message: "no rendition \(rendition); this item has \(plan.renditions.count)")
        }
        if used { try rewind() }
        used = true
        // The first frames of the video, and the first segment's audio: the audio track's edit list (an audio
        // start after the video's, an encoder delay) is written from the audio packets the fragment holds.
        let pipeline = try Pipeline(transcoder: self, rungs: [rendition], window: (0, plan.grid.end(0), 0))
        pipeline.firstFrameOnly = true
        let segment = try pipeline.runSegment()
        return (segment.initialization, segment.codecs)
    }

    /// A ``MediaError`` of one segment's pipeline, with how many source frames it had in its window.
    private struct WindowError: Error {
        let error: MediaError
        let windowFrames: Int
    }

    /// Segment `k` of `rungs` by the one routine both the batch and ``segment(_:rendition:)`` use: seek, decode the
    /// window, encode; from the item's start when the seek landed past the window's start.
    /// - Throws: ``WindowError``.
    private func segments(_ k: Int, rungs: [Int], batch: BatchFiles?, continuous: ContinuousVideo? = nil) throws
        -> (pipeline: Pipeline, segments: [TranscodedSegment]) {
        let grid = plan.grid
        // The last segment the header's duration promises takes whatever follows it: an MPEG-TS duration is an
        // estimate, and pictures past it are still the item's.
        let window = (grid.start(k), k == plan.segmentCount - 1 ? max(grid.end(k), 1e9) : grid.end(k), k)
        if let continuous, continuous.isExact {
            // The video from the decoder that carried on through the segments before; the audio as alone.
            if used { try rewind() }
            used = true
            let before = continuous.decoder.framesDecoded
            let pipeline = try Pipeline(transcoder: self, rungs: rungs, window: window, batch: batch,
                                        continuous: continuous)
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
            let pipeline = try Pipeline(transcoder: self, rungs: rungs, window: window, batch: batch)
            pipeline.fromStart = fromStart
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
    /// Whether a window's preroll skips the pictures nothing refers to (`Pipeline.skipsPreroll`); off only in
    /// tests, which compare the bytes made both ways.
    var skipsPreroll = true
    /// Whether ``run(into:)`` decodes the video once through the item (``ContinuousVideo``) instead of from each
    /// segment's keyframe; off only in tests, which compare the bytes made both ways.
    var sharesVideoDecode = true
    /// Video frames decoded by the operations so far (skipped pictures are not decoded).
    private(set) var framesDecoded = 0
    /// A still's one picture once decoded: image demuxers cannot always seek back to it.
    var stillPicture: Frame? = nil
    /// The item's first picture as shown (its size with its sample aspect ratio and orientation), learnt by the
    /// first operation that starts at the beginning: every segment's renditions are fitted from it, so that a
    /// stream changing size midway keeps one output size in every segment, made alone or in a batch.
    var itemDisplay: Size? = nil
    /// Each rendition's first picture time (in its encoder's time base), learnt like `itemDisplay`: the media
    /// timeline that segments after the first are muxed onto starts there (`Pipeline.fragmentShift`).
    var firstPictureTime: [String: Int64] = [:]
    /// The pictures each rendition's encoder was opened for (size, and frames a second), by rendition name.
    var encodedPictures: [String: (width: Int, height: Int, frameRate: Double)] = [:]

    /// Back to the item's first packet (``MediaFile/rewindToStart()``), so that every pass from the start reads
    /// what the first read.
    private func rewind() throws {
        try file.rewindToStart()
    }
}

/// One run of the decode → filter → encode → mux chain.
private final class Pipeline {
    let file: MediaFile
    let settings: TranscodeSettings
    let plan: TranscodePlan
    let rungs: [Int]
    let window: (start: Double, end: Double, index: Int)?
    /// A batch's renditions' MP4s, which every segment's packets go into; nil alone.
    let batch: BatchFiles?
    /// Where the previews go, for the batch's preview pass; nil otherwise.
    let previewFolder: URL?
    let item: String

    let video: StreamDecoder
    let audio: StreamDecoder?
    /// A batch's video decoder that carries on from segment to segment, in place of a seek and a decoder of this
    /// pipeline's own; nil otherwise.
    let continuous: ContinuousVideo?
    var converter: AudioConverter?
    var audioEncoder: AudioEncoder?
    var graph: FilterGraph?
    var held: Frame?
    var outputs: [Output] = []
    /// Each output's thread (``EncoderLane``), beside `outputs`: the outputs are the lanes' until `pump` joins them.
    private var lanes: [EncoderLane] = []
    var queuedAudio: [Packet] = []
    var videoDone = false
    var audioDone = false
    var videoOrigin: Int64 = 0
    var still = false
    var deinterlaced = false
    var toneMapped = false
    /// Source frames inside the window (all of them without one).
    private(set) var windowFrames = 0
    /// Only the first few video frames (for the initialisation segment).
    var firstFrameOnly = false
    /// Decode from the item's start instead of seeking to the window (the caller rewound the file).
    var fromStart = false
    private var landingChecked = false
    /// Thrown at the first picture decoded after the seek when it is past the window's start.
    struct LandedPastWindow: Error {}
    private var initFrames = 0
    var temporaries: [String] = []

    /// The transcoder (for the still picture it keeps between operations).
    unowned let transcoder: Transcoder

    init(transcoder: Transcoder, rungs: [Int], window: (Double, Double, Int)?, batch: BatchFiles? = nil,
         previewFolder: URL? = nil, continuous: ContinuousVideo? = nil) throws {
        self.transcoder = transcoder
        file = transcoder.file
        settings = transcoder.settings
        plan = transcoder.plan
        self.rungs = rungs
        self.window = window
        self.batch = batch
        self.previewFolder = previewFolder
        item = file.item
        self.continuous = continuous
        video = try continuous?.decoder ?? StreamDecoder(file: file, stream: plan.videoStream, threads: settings.threads)
        if continuous != nil { landingChecked = true }
        if let index = plan.audioStream, !rungs.isEmpty {
            // An audio track FFmpeg cannot decode leaves the renditions silent, not failed.
            audio = try? StreamDecoder(file: file, stream: index, threads: 1)
        } else {
            audio = nil
        }
        audioDone = audio == nil
        let stream = file.stream(at: plan.videoStream)
        let tb = stream.pointee.time_base
        videoOrigin = Pipeline.ticks(file.info.startTime, tb)
        if let audio {
            let atb = audio.timeBase
            let origin = Pipeline.ticks(file.info.startTime, atb)
            let rate = Pipeline.outputRate(file.info.streams.first { $0.index == audio.streamIndex }?.sampleRate ?? 48000)
            let encoder = try AudioEncoder(sampleRate: rate, bitRate: settings.audioBitrate, globalHeader: true,
                                           item: item)
            let audioStream = file.stream(at: audio.streamIndex)
            let streamStart = audioStream.pointee.start_time == vf_nopts_value() ? origin
                : audioStream.pointee.start_time
            let gridOrigin = Double(streamStart.subtractingReportingOverflow(origin).partialValue) * Double(atb.num)
                / Double(max(atb.den, 1))
            converter = try AudioConverter(outputRate: rate, inputTimeBase: atb, origin: origin,
                                           gridOrigin: gridOrigin, frameSize: encoder.frameSize,
                                           start: window?.0 ?? 0, end: window?.1, item: item)
            audioEncoder = encoder
        }
    }

    deinit {
        for path in temporaries { unlink(path) }
    }

    /// AAC's sample rates up to 48 kHz are kept; others become 48 kHz.
    static func outputRate(_ rate: Int) -> Int {
        [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000].contains(rate) ? rate : 48000
    }

    // MARK: Driving

    /// The window's segment of the first rendition.
    func runSegment() throws -> TranscodedSegment {
        try runSegments()[0]
    }

    /// The window's segment of every rendition, in the order of `rungs`.
    func runSegments() throws -> [TranscodedSegment] {
        // A still has one picture: no seek, its frames are made from it.
        // With a continuous decoder the seek is for the audio only, which then starts where a segment alone reads it.
        if let window, window.start > 0, !plan.isStill, !fromStart, continuous == nil || audio != nil {
            try seek(to: window.start)
        }
        try pump()
        var made: [TranscodedSegment] = []
        for output in outputs {
            guard case .rendition = output.kind else { continue }
            if (window?.index ?? 0) == 0, let first = output.firstPTS, transcoder.firstPictureTime[output.name] == nil {
                transcoder.firstPictureTime[output.name] = first
            }
            guard var segment = output.made else {
                throw MediaError(.invalidData, operation: "transcode", item: item,
                                 message: "segment \(window?.index ?? 0) has no frames")
            }
            segment.codecs = output.codecs(hasAudio: audioEncoder != nil)
            made.append(segment)
        }
        guard made.count == rungs.count else {
            throw MediaError(.invalidData, operation: "transcode", item: item,
                             message: "segment \(window?.index ?? 0) has no frames")
        }
        return made
    }

    /// The previews alone (a pipeline with no rendition and a preview folder): made, then renamed into place.
    func runPreview() throws {
        try pump()
        for output in outputs {
            guard let temp = output.mp4Temporary, let path = output.mp4Path else { continue }
            guard rename(temp, path) == 0 else {
                throw MediaError(.io, operation: "write", item: path, message: String(cString: strerror(errno)))
            }
            temporaries.removeAll { $0 == temp }
        }
    }

    private func seek(to seconds: Double) throws {
        // A demuxer without a seek of its own (MPEG-TS) seeks by a binary search on decode timestamps, which lands
        // on any packet with one at or before the target: often just after the keyframe the window needs (with
        // B-frames a keyframe's decode time is before its presentation time), so its frames would not decode. A
        // second earlier lands before it; the frames before the window are dropped.
        let format = file.context.pointee.iformat
        let searches = format?.pointee.read_seek == nil && format?.pointee.read_seek2 == nil
        if searches, seconds <= 1 {
            // A second earlier is the start: read from the first packet (the search could land after it).
            try file.rewindToStart()
        } else {
            try file.seekBackward(to: searches ? max(0, seconds - 1) : seconds, stream: plan.videoStream)
        }
        if continuous == nil { video.flush() }
        audio?.flush()
    }

    /// Reads every packet (or those of the window), decodes, filters, encodes and muxes; then drains everything.
    /// Each output encodes on its own lane; they are joined before this returns, and abandoned when it throws.
    private func pump() throws {
        do {
            try pumpPackets()
            for lane in lanes { try lane.join() }
        } catch {
            for lane in lanes { lane.abandon() }
            throw error
        }
    }

    /// Runs `body` with each output on the output's lane.
    private func eachOutput(_ body: @escaping (Output) throws -> Void) throws {
        for (output, lane) in zip(outputs, lanes) {
            try lane.submit { try body(output) }
        }
    }

    private func pumpPackets() throws {
        if plan.isStill, let picture = transcoder.stillPicture?.clone() {
            // The picture decoded by an earlier operation: nothing to read again.
            videoDone = true
            try videoFrameReady(picture)
            try finishVideo()
            return
        }
        guard let packet = Packet() else {
            throw MediaError(.limitExceeded, operation: "transcode", item: item, message: "out of memory")
        }
        if let continuous {
            // The window's pictures from the decoder that carries on (the first past the window goes back to it),
            // then the window's audio from this file's packets.
            while !videoDone, let frame = try continuous.next() { try videoFrame(frame) }
            while let audio, !audioDone {
                if try file.readPacket(into: packet.raw) == .endOfFile {
                    try decode(audio, nil)
                    break
                }
                if Int(packet.raw.pointee.stream_index) == audio.streamIndex { try decode(audio, packet.raw) }
                av_packet_unref(packet.raw)
            }
            try finishVideo()
            try finishAudio()
            return
        }
        while !(videoDone && audioDone) {
            // A read error fails the item (where the ffmpeg CLI would end the input there): a rendition cut short
            // would be recorded as done and never redone.
            let read = try file.readPacket(into: packet.raw)
            if read == .endOfFile { break }
            let index = Int(packet.raw.pointee.stream_index)
            if index == video.streamIndex, !videoDone {
                if skipsPreroll { video.skipsNonReference = isPreroll(packet.raw) }
                try decode(video, packet.raw)
            } else if let audio, index == audio.streamIndex, !audioDone {
                try decode(audio, packet.raw)
            }
            av_packet_unref(packet.raw)
        }
        if !videoDone { try decode(video, nil) }
        if let audio, !audioDone { try decode(audio, nil) }
        try finishVideo()
        try finishAudio()
    }

    /// Whether the window's preroll may skip pictures nothing refers to: a window after the item's start, an H.264
    /// stream from MP4/MOV. The seek lands on the keyframe before the window, up to a GOP earlier (8.3 s for x264's
    /// defaults at 30 fps), and every picture from there is decoded only for the window's pictures to refer to;
    /// one that nothing refers to (a B-picture of x264's, 40 % of a typical stream's) would be decoded and dropped.
    /// MP4/MOV gives every packet a presentation time, so a picture's place is known before it is decoded, and no
    /// picture in the window needs the frame-count fallback for a missing timestamp (which skipped pictures would
    /// shift). Other containers and codecs decode every picture, as before.
    private lazy var skipsPreroll: Bool = {
        guard transcoder.skipsPreroll, continuous == nil, let window, window.start > 0, !firstFrameOnly, !plan.isStill,
              video.codecID == AV_CODEC_ID_H264,
              let name = file.context.pointee.iformat?.pointee.name else { return false }
        return String(cString: name).hasPrefix("mov,")
    }()

    /// Whether the decoded frames' presentation times have risen so far, each the frame's own packet's (see
    /// `videoFrameReady`), and the last of them.
    private var prerollTimesRise = true
    private var lastPrerollPTS: Int64? = nil

    /// Whether `packet` is a video picture before the window (by a margin of 50 ms: the frame's own timestamp is the
    /// packet's, compared with the window's start by `videoFrameReady`, which drops it) and not a keyframe, while
    /// the frames' times rise.
    private func isPreroll(_ packet: UnsafeMutablePointer<AVPacket>) -> Bool {
        guard prerollTimesRise, let window, packet.pointee.pts != vf_nopts_value(),
              packet.pointee.flags & AV_PKT_FLAG_KEY == 0 else {
            return false
        }
        let shifted = packet.pointee.pts.subtractingReportingOverflow(videoOrigin)
        guard !shifted.overflow else { return false }
        let tb = video.timeBase
        return Double(shifted.partialValue) * Double(tb.num) / Double(max(tb.den, 1)) < window.start - 0.05
    }

    private func decode(_ decoder: StreamDecoder, _ packet: UnsafeMutablePointer<AVPacket>?) throws {
        var accepted = try decoder.send(packet)
        while true {
            switch try decoder.receive() {
            case .output(let frame):
                if decoder.isVideo { try videoFrame(frame) } else { try audioFrame(frame) }
            case .needsInput, .ended:
                if !accepted {
                    accepted = try decoder.send(packet)
                    continue
                }
                return
            }
        }
    }

    // MARK: Video

    private func videoFrame(_ frame: Frame) throws {
        if videoDone { return }
        if plan.isStill, transcoder.stillPicture == nil { transcoder.stillPicture = frame.clone() }
        try videoFrameReady(frame)
    }

    private func videoFrameReady(_ frame: Frame) throws {
        let raw = frame.raw
        let ownPTS = raw.pointee.pts
        let ts = raw.pointee.best_effort_timestamp != vf_nopts_value() ? raw.pointee.best_effort_timestamp
            : raw.pointee.pts
        if skipsPreroll, prerollTimesRise {
            // FFmpeg times a frame by its packet's pts only while the pts it has seen keep rising; after a repeat
            // or a step back it may take the decode time, and the skipped pictures, missing from that count,
            // could change which. Skipping stops at the first sign of it.
            let pts = raw.pointee.pts
            if pts == vf_nopts_value() || ts != pts || (lastPrerollPTS.map { pts <= $0 } ?? false) {
                prerollTimesRise = false
            }
            lastPrerollPTS = pts
        }
        let tb = video.timeBase
        // Hostile timestamps must not trap: an overflowing difference counts as no timestamp.
        let shifted = ts.subtractingReportingOverflow(videoOrigin)
        let pts = ts == vf_nopts_value() || shifted.overflow ? Int64(video.framesDecoded - 1) : shifted.partialValue
        raw.pointee.pts = pts
        let seconds = Double(pts) * Double(tb.num) / Double(max(tb.den, 1))
        if let window, !firstFrameOnly, !plan.isStill {
            if !landingChecked {
                landingChecked = true
                // The seek landed past the window's start (no keyframe where the demuxer's search landed: an
                // MPEG-TS with long GOPs): the frames from the start to here would be lost. Start over from the
                // beginning of the item instead.
                if window.start > 0, !fromStart, seconds > window.start + 0.0005 { throw LandedPastWindow() }
            }
            if seconds < window.start - 0.0005 { return }
            if seconds >= window.end - 0.0005 {
                videoDone = true
                if let continuous {
                    // The next window's first picture, as the decoder gave it.
                    raw.pointee.pts = ownPTS
                    continuous.putBack(frame)
                }
                return
            }
        }
        windowFrames += 1
        if firstFrameOnly {
            // Enough frames for the encoder's reordering delay to show (the edit list depends on it).
            if graph == nil { try configure(first: raw, still: plan.isStill) }
            if plan.isStill {
                // A still's video is its one picture repeated: as many copies as the encoder's delay needs.
                for i in 0..<8 {
                    guard let copy = frame.clone() else { break }
                    copy.raw.pointee.pts = Int64(i)
                    try filter(copy.raw)
                }
                videoDone = true
                return
            }
            try filter(raw)
            initFrames += 1
            if initFrames >= 8 { videoDone = true }
            return
        }
        if graph == nil {
            guard let first = held else {
                held = frame
                return
            }
            try configure(first: first.raw, still: false)
            held = nil
            try filter(first.raw)
        }
        try filter(raw)
    }

    private func finishVideo() throws {
        if graph == nil, let first = held, window != nil, !plan.isStill {
            // One frame of a video falls in this segment.
            try configure(first: first.raw, still: false)
            held = nil
            try filter(first.raw)
        }
        if graph == nil, let first = held {
            // One picture in the whole stream: a still, shown for the still duration.
            still = true
            try configure(first: first.raw, still: true)
            let count = max(1, Int((settings.stillSeconds * Double(settings.stillFrameRate)).rounded()))
            let total = window.map { w in min(count, Int((w.end * Double(settings.stillFrameRate)).rounded())) } ?? count
            let start = window.map { Int(($0.start * Double(settings.stillFrameRate)).rounded()) } ?? 0
            for i in start..<max(start, total) {
                guard let copy = first.clone() else { break }
                copy.raw.pointee.pts = Int64(i)
                try filter(copy.raw)
            }
            held = nil
        }
        guard let graph else {
            if let failure = video.failureWithoutFrames { throw failure }
            throw MediaError(.invalidData, operation: "decode", item: item, message: "no frame could be decoded")
        }
        try graph.push(nil)
        try drainGraph(ending: true)
        try eachOutput { try $0.finishVideo() }
        videoDone = true
    }

    private func filter(_ frame: UnsafeMutablePointer<AVFrame>) throws {
        try file.throwIfCancelled("transcode")
        frame.pointee.pict_type = AV_PICTURE_TYPE_NONE
        if let setup = graphSetup, graph != nil, FilterGraph.shape(frame) != setup.shape {
            // The stream changed size, pixel format or aspect midway (an ad break in a broadcast, a new SPS): the
            // graph was configured for the old pictures, so it is drained and built anew for the new ones, as the
            // ffmpeg CLI does. The branches keep their output sizes, so the encoders go on.
            try graph?.push(nil)
            try drainGraph(ending: true)
            graph = try FilterGraph(setup.description, input: frame, timeBase: setup.timeBase,
                                    frameRate: setup.frameRate, outputs: setup.outputs, threads: settings.filterThreads,
                                    item: item)
            graphSetup?.shape = FilterGraph.shape(frame)
        }
        try graph?.push(frame)
        try drainGraph(ending: false)
    }

    /// How the graph was built, to rebuild it for pictures of another shape.
    private var graphSetup: (description: String, timeBase: AVRational, frameRate: AVRational, outputs: Int,
                             shape: [Int32])? = nil

    private func drainGraph(ending: Bool) throws {
        guard let graph else { return }
        for (i, (output, lane)) in zip(outputs, lanes).enumerated() {
            pulling: while true {
                switch try graph.pull(i) {
                case .output(let frame):
                    // Encoding dominates once the packets are read (a short segment, a slow preset): a cancelled
                    // item stops here too, not only at its next packet read.
                    try file.throwIfCancelled("transcode")
                    try lane.submit { try output.encode(frame) }
                case .needsInput, .ended: break pulling
                }
            }
        }
    }

    // MARK: Audio

    private func audioFrame(_ frame: Frame) throws {
        guard let converter, let audioEncoder, !audioDone else { return }
        try converter.push(frame.raw)
        while let chunk = try converter.pull(size: audioEncoder.frameSize, flushing: false) {
            try audioPackets(audioEncoder.encode(chunk.raw))
        }
        if let window, let audio {
            // Past the window's end: the audio of this segment is complete.
            let ts = frame.raw.pointee.best_effort_timestamp
            let tb = audio.timeBase
            if ts != vf_nopts_value(),
               Double(ts) * Double(tb.num) / Double(max(tb.den, 1)) - file.info.startTime >= window.end + 0.1 {
                try finishAudio()
            }
        }
    }

    private func finishAudio() throws {
        guard !audioDone || (converter != nil && audioEncoder != nil && !finishedAudio) else { return }
        guard let converter, let audioEncoder, !finishedAudio else {
            audioDone = true
            return
        }
        finishedAudio = true
        try converter.push(nil)
        while let chunk = try converter.pull(size: audioEncoder.frameSize, flushing: true) {
            try audioPackets(audioEncoder.encode(chunk.raw))
        }
        try audioPackets(audioEncoder.encode(nil))
        audioDone = true
        if outputs.isEmpty { return }
        try eachOutput { try $0.finishAudio() }
    }

    private var finishedAudio = false

    private func audioPackets(_ packets: [Packet]) throws {
        var packets = packets
        if let window, window.index > 0, let start = converter?.startSample {
            // A segment made alone starts with the encoder's priming frame, which the segment before holds already.
            packets.removeAll { $0.pts < start }
        }
        if window != nil, let cut = converter?.cutSample {
            // ... and ends with a frame encoded only so that its last packet decodes right: the next segment's.
            packets.removeAll { $0.pts >= cut }
        }
        guard !packets.isEmpty else { return }
        if outputs.isEmpty {
            queuedAudio += packets
            return
        }
        try eachOutput { output in
            for packet in packets { try output.audio(packet) }
        }
    }

    // MARK: Setting up

    private func configure(first: UnsafeMutablePointer<AVFrame>, still: Bool) throws {
        let stream = file.stream(at: plan.videoStream)
        let info = file.info.streams.first { $0.index == plan.videoStream }!
        var timeBase = video.timeBase
        var frameRate = stream.pointee.avg_frame_rate
        if still {
            timeBase = AVRational(num: 1, den: Int32(settings.stillFrameRate))
            frameRate = AVRational(num: Int32(settings.stillFrameRate), den: 1)
        }
        // The picture as shown, from the decoded frame: its size, and the sample aspect ratio FFmpeg would use
        // (`av_guess_sample_aspect_ratio`: the stream's, else the bitstream's), which a header may not carry.
        let sar = av_guess_sample_aspect_ratio(file.context, stream, first)
        let shown = TranscodePlan.displaySize(width: Int(first.pointee.width), height: Int(first.pointee.height),
                                              sampleAspectRatio: Rational(sar), orientation: info.orientation)
        // Every segment is fitted from the item's first picture (a stream may change size midway); an operation
        // starting at the beginning learns it.
        if transcoder.itemDisplay == nil, firstFrameOnly || (window?.index ?? 0) == 0 { transcoder.itemDisplay = shown }
        let display = transcoder.itemDisplay ?? shown
        // Branches: the renditions, then the preview's MP4 and WebP.
        var branches: [String] = []
        let toneMap = toneMapping(first: first)
        if toneMap != nil { toneMapped = true }
        // An untagged HD picture is read as BT.709 (``UntaggedColour``), which libswscale's default would take for
        // BT.601 and convert.
        let untaggedHD = first.pointee.colorspace == AVCOL_SPC_UNSPECIFIED
            && UntaggedColour.matrix(of: first) == AVCOL_SPC_BT709
        for r in rungs {
            let rung = plan.renditions[r]
            let size = rung.box.map { TranscodePlan.fit(display, in: $0) }
                ?? Size(width: rung.width, height: rung.height)
            branches.append(Pipeline.branch(width: size.width, height: size.height, orientation: info.orientation,
                                            adjustment: settings.adjustment, toneMap: toneMap,
                                            inputIsBT709: untaggedHD))
        }
        let preview = previewFolder == nil ? nil : settings.preview
        var description = "[in]" + prefilters(first: first, info: info, still: still)
        if let preview {
            let size = TranscodePlan.fit(display, in: preview.box)
            let shaped = Pipeline.branch(width: size.width, height: size.height, orientation: info.orientation,
                                         adjustment: settings.adjustment, toneMap: toneMap,
                                         inputIsBT709: untaggedHD)
            branches.append("trim=end=\(preview.seconds)," + shaped)
            branches.append("trim=end=\(preview.seconds),fps=\(preview.webpFrameRate)," + shaped)
        }
        if branches.count == 1 {
            description += "," + branches[0] + "[out0]"
        } else {
            description += ",split=\(branches.count)" + branches.indices.map { "[s\($0)]" }.joined() + ";"
            description += branches.enumerated().map { "[s\($0.offset)]\($0.element)[out\($0.offset)]" }
                .joined(separator: ";")
        }
        let graph = try FilterGraph(description, input: first, timeBase: timeBase, frameRate: frameRate,
                                    outputs: branches.count, threads: settings.filterThreads, item: item)
        self.graph = graph
        graphSetup = (description, timeBase, frameRate, branches.count, FilterGraph.shape(first))
        var made: [Output] = []
        for (i, r) in rungs.enumerated() {
            made.append(try makeRendition(graph: graph, sink: i, rung: plan.renditions[r], sourceRate: frameRate))
        }
        if let preview, let folder = previewFolder {
            let mp4Sink = rungs.count, webpSink = rungs.count + 1
            let size = graph.size(of: mp4Sink)
            let encoder = try VideoEncoder(width: size.width, height: size.height, timeBase: graph.timeBase(of: mp4Sink),
                                           frameRate: Pipeline.rate(graph.frameRate(of: mp4Sink), or: frameRate),
                                           encoding: settings.video,
                                           maxBitrate: Int(Double(size.width * size.height) * settings.maxBitsPerPixel),
                                           globalHeader: true, item: item)
            encoder.isCancelled = { [file] in file.isCancelled }
            let path = folder.appendingPathComponent(ItemFile.preview.path).path
            let temp = temporary(for: path)
            let writer = try MediaWriter(.file(temp, format: "mp4", options: ["movflags": "+faststart"]), item: item)
            let stream = try writer.addStream(from: encoder.context)
            try writer.begin()
            made.append(Output(kind: .preview(path), encoder: .video(encoder), mp4: writer, mp4Path: path, mp4Temporary: temp,
                               videoStream: stream, audioStream: nil, cutter: nil, grid: nil,
                               timeBase: graph.timeBase(of: mp4Sink), name: "preview"))
            let webpSize = graph.size(of: webpSink)
            let webpTimeBase = graph.timeBase(of: webpSink)
            let webp = try WebPEncoder(width: webpSize.width, height: webpSize.height, timeBase: webpTimeBase,
                                       quality: preview.webpQuality, item: item)
            let webpPath = folder.appendingPathComponent(ItemFile.previewWebP.path).path
            let webpTemp = temporary(for: webpPath)
            let webpWriter = try MediaWriter(.file(webpTemp, format: "webp", options: ["loop": "0"]), item: item)
            let webpStream = try webpWriter.addStream(from: webp.context)
            try webpWriter.begin()
            made.append(Output(kind: .preview(webpPath), encoder: .webp(webp), mp4: webpWriter, mp4Path: webpPath,
                               mp4Temporary: webpTemp,
                               videoStream: webpStream, audioStream: nil, cutter: nil, grid: nil,
                               timeBase: webpTimeBase, name: "preview-webp"))
        }
        outputs = made
        lanes = made.map { EncoderLane(name: "videofeed.encode.\($0.name)") }
        let queued = queuedAudio
        try eachOutput { output in
            for packet in queued { try output.audio(packet) }
        }
        queuedAudio = []
        // The audio may have ended (a segment's window passed) before the first picture made the outputs.
        if finishedAudio { try eachOutput { try $0.finishAudio() } }
    }

    private func makeRendition(graph: FilterGraph, sink: Int, rung: TranscodePlan.Rendition,
                               sourceRate: AVRational) throws -> Output {
        let size = graph.size(of: sink)
        let timeBase = graph.timeBase(of: sink)
        let frameRate = Pipeline.rate(graph.frameRate(of: sink), or: sourceRate)
        transcoder.encodedPictures[rung.name] = (size.width, size.height, av_q2d(frameRate))
        let encoder = try VideoEncoder(width: size.width, height: size.height, timeBase: timeBase,
                                       frameRate: frameRate,
                                       codec: rung.videoCodec, encoding: settings.video, av1: settings.av1,
                                       maxBitrate: rung.maxBitrate, globalHeader: true, item: item)
        encoder.isCancelled = { [file] in file.isCancelled }
        // A batch's MP4 of this rendition, which every segment's packets go into (opened by the first segment,
        // finished by the batch).
        let mp4 = try batch?.mp4(of: rung.name, video: encoder.context, audio: audioEncoder?.context)
        var cutter: SegmentCutter? = nil
        let output = Output(kind: .rendition(rung), encoder: .video(encoder), mp4: mp4?.writer, mp4Path: nil,
                            mp4Temporary: nil, videoStream: mp4?.videoStream ?? 0, audioStream: mp4?.audioStream,
                            cutter: nil, grid: plan.grid, timeBase: timeBase, name: rung.name,
                            finishesMP4: false)
        if let window, window.index > 0 {
            output.fragmentShift = fragmentShift(videoTimeBase: timeBase, firstPicture: transcoder.firstPictureTime[rung.name])
        }
        do {
            let writer = try MediaWriter(.fragments(options: ["movflags": "frag_custom+dash+delay_moov"
                                                                + (window.map { $0.index > 0 } == true ? "+frag_discont" : "")]),
                                         item: item)
            let v = try writer.addStream(from: encoder.context)
            let a = try audioEncoder.map { try writer.addStream(from: $0.context) }
            try writer.begin()
            cutter = SegmentCutter(writer: writer, videoStream: v, audioStream: a, grid: plan.grid,
                                   only: window?.index) { [unowned output] segment in
                Pipeline.store(segment, of: output)
            }
            output.cutter = cutter
        }
        return output
    }

    /// What a segment after the first adds to its packets' timestamps (video, in `videoTimeBase`; audio, in the
    /// AAC encoder's) so that its fragment lies on the media timeline the first segment's muxer set up.
    ///
    /// Segment 0 is muxed as the start of the stream: each track's media time is its decode time less its first
    /// packet's, and the init's edit list shows that from the track's first presentation time (video: its first
    /// picture, after an empty edit when it starts after the audio; audio: past the encoder's priming). A later
    /// segment is muxed with `frag_discont`, which takes the track's media time to be its presentation time (less
    /// the first packet's lead, `decodeLead` for video). The shift is the difference: minus the first picture's time
    /// for video (learnt by the operation that started at the beginning: ``Transcoder/segment(_:rendition:)`` makes
    /// the init first, a batch segment 0; the stream's header start otherwise, which a stream whose first pictures
    /// do not decode contradicts); the priming less the audio grid's start for audio.
    private func fragmentShift(videoTimeBase: AVRational, firstPicture: Int64?) -> (video: Int64, audio: Int64) {
        var video: Int64 = 0
        if let firstPicture {
            video = -firstPicture
        } else if !plan.isStill {
            let stream = file.stream(at: plan.videoStream)
            let start = stream.pointee.start_time
            if start != vf_nopts_value() {
                let offset = start.subtractingReportingOverflow(videoOrigin)
                if !offset.overflow, offset.partialValue > 0 {
                    video = -av_rescale_q(offset.partialValue, stream.pointee.time_base, videoTimeBase)
                }
            }
        }
        var audio: Int64 = 0
        if let converter, let audioEncoder {
            audio = Int64(max(0, audioEncoder.context.pointee.initial_padding)) - converter.gridStart
        }
        return (video, audio)
    }

    private static func store(_ segment: SegmentCutter.Segment, of output: Output) {
        let bits = Double(segment.bytes.count * 8)
        output.segments.append((segment.index, segment.start, segment.end, segment.bytes.count))
        output.peakBandwidth = max(output.peakBandwidth, Int(bits / max(segment.end - segment.start, 0.1)))
        output.made = TranscodedSegment(index: segment.index, initialization: output.cutter?.initialization ?? [],
                                        media: segment.bytes, start: segment.start,
                                        duration: segment.end - segment.start, frames: segment.frames, codecs: "")
    }

    /// The filters before the split: deinterlace, frame-rate cap.
    private func prefilters(first: UnsafeMutablePointer<AVFrame>, info: StreamInfo, still: Bool) -> String {
        var chain: [String] = []
        let order = file.stream(at: plan.videoStream).pointee.codecpar.pointee.field_order
        if settings.deinterlaces, !still, Deinterlacer.isNeeded(first: first, fieldOrder: order) {
            chain.append(Deinterlacer.filter)
            deinterlaced = true
        }
        // Timestamp jitter makes a 60 fps phone clip measure 60.06: only a rate clearly above the cap is capped.
        if !still, let fps = info.averageFrameRate.value, fps > settings.maxFrameRate * 1.05 {
            chain.append("fps=fps=\(settings.maxFrameRate)")
        }
        return chain.isEmpty ? "null" : chain.joined(separator: ",")
    }

    /// How an HDR picture (PQ or HLG) is tone-mapped to SDR BT.709, as `zscale` input options (what the frame says
    /// of itself, BT.2020 where it says nothing); nil for SDR or with tone mapping off.
    private func toneMapping(first: UnsafeMutablePointer<AVFrame>) -> ToneMap? {
        let trc = first.pointee.color_trc
        guard settings.toneMapsHDR, trc == AVCOL_TRC_SMPTE2084 || trc == AVCOL_TRC_ARIB_STD_B67 else { return nil }
        var input = "tin=" + (trc == AVCOL_TRC_SMPTE2084 ? "smpte2084" : "arib-std-b67")
        if first.pointee.color_primaries == AVCOL_PRI_UNSPECIFIED { input += ":pin=bt2020" }
        if first.pointee.colorspace == AVCOL_SPC_UNSPECIFIED { input += ":min=bt2020nc" }
        if first.pointee.color_range == AVCOL_RANGE_UNSPECIFIED { input += ":rin=tv" }
        return ToneMap(input: input)
    }

    /// The tone-mapping recipe of the usual ffmpeg command (linear light, BT.709 primaries, Hable, back to BT.709
    /// limited range), applied per branch at the branch's size: the first `zscale` also resizes, so the float
    /// stages run on the rendition's pixels, not the source's (a 720x405 rendition of a 1920x1080 HDR10 source:
    /// 7× fewer).
    struct ToneMap {
        /// `zscale` options naming the input's transfer (and primaries, matrix, range where the frame has none).
        let input: String

        func filters(width: Int, height: Int) -> String {
            "zscale=w=\(width):h=\(height):f=bicubic:\(input):t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,"
                + "tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p"
        }
    }

    /// One branch after the split: scale to the rendition's size in the stored orientation (tone-mapping HDR on the
    /// way), 8-bit 4:2:0 BT.709 limited range, adjust, turn upright, square pixels. `inputIsBT709` names the
    /// matrix of a picture that does not say its own (libswscale would take BT.601); a BT.709 input is only
    /// resized, any other is converted.
    static func branch(width: Int, height: Int, orientation: Orientation, adjustment: PictureAdjustment,
                       toneMap: ToneMap? = nil, inputIsBT709: Bool = false) -> String {
        let (w, h) = orientation.swapsAxes ? (height, width) : (width, height)
        let input = inputIsBT709 ? "in_color_matrix=bt709:" : ""
        var filters = toneMap.map { [$0.filters(width: w, height: h)] }
            ?? ["scale=w=\(w):h=\(h):flags=bicubic:\(input)out_color_matrix=bt709:out_range=tv", "format=yuv420p"]
        if !adjustment.isIdentity {
            filters.append("eq=brightness=\(adjustment.brightness):contrast=\(adjustment.contrast)"
                + ":saturation=\(adjustment.saturation)")
        }
        if orientation.mirrored { filters.append("hflip") }
        switch orientation.rotation {
        case 90: filters.append("transpose=clock")
        case 180: filters.append("hflip,vflip")
        case 270: filters.append("transpose=cclock")
        default: break
        }
        filters.append("setsar=1")
        return filters.joined(separator: ",")
    }

    /// `seconds` in ticks of `timeBase`, clamped so that no conversion traps on a hostile start time.
    static func ticks(_ seconds: Double, _ timeBase: AVRational) -> Int64 {
        let value = seconds * Double(timeBase.den) / Double(max(timeBase.num, 1))
        guard value.isFinite else { return 0 }
        return Int64(min(max(value, -4e18), 4e18).rounded())
    }

    static func rate(_ rate: AVRational, or fallback: AVRational) -> AVRational {
        if rate.num > 0 && rate.den > 0 { return rate }
        if fallback.num > 0 && fallback.den > 0 { return fallback }
        return AVRational(num: 30, den: 1)
    }

    private func temporary(for path: String) -> String {
        let temp = AtomicFile.temporaryPath(for: path)
        temporaries.append(temp)
        return temp
    }
}

/// One output branch of the graph: an encoder and where its packets go.
private final class Output {
    enum Kind {
        case rendition(TranscodePlan.Rendition)
        case preview(String)
    }

    enum Encoder {
        case video(VideoEncoder)
        case webp(WebPEncoder)
    }

    let kind: Kind
    let encoder: Encoder
    let mp4: MediaWriter?
    let mp4Path: String?
    let mp4Temporary: String?
    let videoStream: Int
    let audioStream: Int?
    var cutter: SegmentCutter?
    /// Where segments begin (a keyframe is forced at each boundary); nil for outputs without segments.
    let grid: SegmentGrid?
    let timeBase: AVRational
    let name: String
    var frames = 0
    var lastPTS: Int64? = nil
    /// Frame durations by timestamp until their packets come out; the last gap between frames.
    private var durations: [Int64: Int64] = [:]
    /// Until a second frame gives a gap, the nominal frame duration: a session of one frame (the last segment of
    /// some items) gives it that duration, not one tick.
    private lazy var lastGap: Int64 = nominalFrameTicks
    var nextBoundary = 0.0
    var firstTime: Double? = nil
    /// The first frame's timestamp in `timeBase`.
    var firstPTS: Int64? = nil
    var lastEnd: Double? = nil
    var segments: [(index: Int, start: Double, end: Double, bytes: Int)] = []
    var peakBandwidth = 0
    var width = 0
    var height = 0
    /// The segment cut, once it is.
    var made: TranscodedSegment? = nil
    /// Added to the timestamps of the packets given to the cutter (see `Pipeline.fragmentShift`).
    var fragmentShift: (video: Int64, audio: Int64) = (0, 0)

    static func shift(_ packet: Packet, by ticks: Int64) {
        guard ticks != 0 else { return }
        let raw = packet.raw
        if raw.pointee.pts != vf_nopts_value() { raw.pointee.pts = raw.pointee.pts.addingReportingOverflow(ticks).partialValue }
        if raw.pointee.dts != vf_nopts_value() { raw.pointee.dts = raw.pointee.dts.addingReportingOverflow(ticks).partialValue }
    }
    /// Whether `mp4` is this output's own, to finish when the streams end (a batch's rendition MP4 spans every
    /// segment and is finished by the batch).
    let finishesMP4: Bool
    private var videoFinished = false

    init(kind: Kind, encoder: Encoder, mp4: MediaWriter?, mp4Path: String?, mp4Temporary: String?, videoStream: Int,
         audioStream: Int?,
         cutter: SegmentCutter?, grid: SegmentGrid?, timeBase: AVRational, name: String, finishesMP4: Bool = true) {
        self.finishesMP4 = finishesMP4
        self.kind = kind
        self.encoder = encoder
        self.mp4 = mp4
        self.mp4Path = mp4Path
        self.mp4Temporary = mp4Temporary
        self.videoStream = videoStream
        self.audioStream = audioStream
        self.cutter = cutter
        self.grid = grid
        self.timeBase = timeBase
        self.name = name
    }

    var codecString: String {
        if case .video(let e) = encoder { return e.codecString }
        return "webp"
    }

    func codecs(hasAudio: Bool) -> String { codecString + (hasAudio ? "," + CodecString.aacLC : "") }

    private var seconds: Double { Double(timeBase.num) / Double(max(timeBase.den, 1)) }

    func encode(_ frame: Frame) throws {
        let raw = frame.raw
        let pts = raw.pointee.pts
        if let lastPTS, pts <= lastPTS { return }   // x264 needs rising timestamps; a duplicate is dropped
        // Packet durations: the gap to the next frame (known by the time the encoder gives the packet out), and
        // for the last frame the gap before it. (A frame's own duration field is in its source's time base, which
        // the graph may have changed.) The muxers give the last sample its duration from it.
        if let lastPTS {
            let gap = pts.subtractingReportingOverflow(lastPTS)
            lastGap = gap.overflow ? 1 : gap.partialValue
            durations[lastPTS] = lastGap
        }
        durations[pts] = lastGap
        lastPTS = pts
        width = Int(raw.pointee.width)
        height = Int(raw.pointee.height)
        let time = Double(pts) * seconds
        if firstTime == nil { firstTime = time; firstPTS = pts }
        raw.pointee.pict_type = AV_PICTURE_TYPE_NONE
        if let grid, frames == 0 || time >= nextBoundary - 1e-4 {
            raw.pointee.pict_type = AV_PICTURE_TYPE_I
            nextBoundary = grid.end(grid.index(at: time))
        }
        frames += 1
        let end = time + Double(durations[pts] ?? 0) * seconds
        lastEnd = max(lastEnd ?? end, end)
        try deliver(encodeRaw(raw))
    }

    private func encodeRaw(_ frame: UnsafeMutablePointer<AVFrame>?) throws -> [Packet] {
        switch encoder {
        case .video(let e): try e.encode(frame)
        case .webp(let e): try e.encode(frame)
        }
    }

    /// The decode-time lead every segment's encoder is given: x264's reordering delay in frames (`has_b_frames`)
    /// times the nominal frame duration, at least two ticks when there is a delay. It depends on the settings and
    /// the stream's nominal rate alone, so the segments of one rendition, each made alone, and its init agree.
    private lazy var decodeLead: Int64 = {
        guard case .video(let e) = encoder else { return 0 }
        let delay = Int64(max(0, e.context.pointee.has_b_frames))
        guard delay > 0 else { return 0 }
        return max(2, delay * nominalFrameTicks)
    }()

    /// One frame at the encoder's nominal rate, in `timeBase` ticks (at least one).
    private var nominalFrameTicks: Int64 {
        guard case .video(let e) = encoder else { return 1 }
        let rate = e.context.pointee.framerate
        guard rate.num > 0, rate.den > 0 else { return 1 }
        return max(1, av_rescale_q(1, AVRational(num: rate.den, den: rate.num), timeBase))
    }
    /// The first packet's presentation time, and the shift given to it and to the packets before it in time.
    private var leadIn: (pts: Int64, shift: Int64)? = nil
    private var lastDTS: Int64? = nil

    /// Gives the packets decode times whose lead over presentation is the same in every encoder session.
    ///
    /// x264 derives its first packets' decode times from the gaps between the first few frames it is given (its
    /// reordering delay in time), so a session started at a segment of a variable-rate source, or at one with fewer
    /// frames than that delay, leads by another amount than the session the init came from. The MP4 muxer writes
    /// that first lead into the init's edit list and shows every fragment through it: a segment made with another
    /// lead would be shown early or late. The first packet (and those before it in time) take `decodeLead`; later
    /// packets keep x264's decode times, moved up a tick where that keeps them rising.
    private func normaliseDecodeTime(_ packet: Packet) {
        let raw = packet.raw
        guard raw.pointee.pts != vf_nopts_value(), raw.pointee.dts != vf_nopts_value() else { return }
        if leadIn == nil {
            let lead = raw.pointee.pts.subtractingReportingOverflow(raw.pointee.dts)
            let shift = lead.partialValue.subtractingReportingOverflow(decodeLead)
            guard !lead.overflow, !shift.overflow else { return }
            leadIn = (raw.pointee.pts, shift.partialValue)
        }
        var dts = raw.pointee.dts
        if let leadIn, dts < leadIn.pts || lastDTS == nil { dts = dts.addingReportingOverflow(leadIn.shift).partialValue }
        if let lastDTS, dts <= lastDTS, lastDTS < raw.pointee.pts { dts = lastDTS + 1 }
        raw.pointee.dts = dts
        lastDTS = dts
    }

    private func deliver(_ packets: [Packet]) throws {
        for packet in packets {
            if case .video = encoder { normaliseDecodeTime(packet) }
            if packet.raw.pointee.duration <= 0 {
                packet.raw.pointee.duration = durations[packet.pts] ?? lastGap
            }
            durations[packet.pts] = nil
            let time = Double(packet.pts) * seconds
            let duration = Double(max(packet.raw.pointee.duration, 0)) * seconds
            if let end = lastEnd, duration == 0, time >= end { lastEnd = time }
            if let cutter, let copy = packet.clone() {
                Output.shift(copy, by: fragmentShift.video)
                let dts = packet.raw.pointee.dts
                try cutter.addVideo(copy, time: time, decodeTime: dts == vf_nopts_value() ? time : Double(dts) * seconds,
                                    duration: duration)
            }
            if let mp4 { try mp4.write(packet, stream: videoStream, interleaved: true) }
        }
    }

    func audio(_ packet: Packet) throws {
        let tb = packet.raw.pointee.time_base
        let time = Double(packet.pts) * Double(tb.num) / Double(max(tb.den, 1))
        if let mp4, let audioStream, let copy = packet.clone() {
            try mp4.write(copy, stream: audioStream, interleaved: true)
        }
        if let cutter, let copy = packet.clone() {
            Output.shift(copy, by: fragmentShift.audio)
            try cutter.addAudio(copy, time: time)
        }
    }

    func finishVideo() throws {
        guard !videoFinished else { return }
        videoFinished = true
        try deliver(encodeRaw(nil))
        try cutter?.endVideo()
        if audioStream == nil || cutter == nil { try finishIfDone(audioEnded: audioStream == nil) }
    }

    private var audioEnded = false

    func finishAudio() throws {
        audioEnded = true
        try cutter?.endAudio()
        try finishIfDone(audioEnded: true)
    }

    private func finishIfDone(audioEnded: Bool) throws {
        guard videoFinished, audioEnded || audioStream == nil, finishesMP4 else { return }
        try mp4?.finish()
    }
}

/// What a batch run gathers across its segments: each rendition's fast-start MP4 (every segment's packets, muxed in
/// a row), its segment files, and what the report says of it.
private final class BatchFiles {
    /// A rendition's MP4 being written under its temporary name.
    struct MP4 {
        let writer: MediaWriter
        let videoStream: Int
        let audioStream: Int?
        let path: String
        let temporary: String
    }

    /// One rendition's segments so far.
    struct Record {
        var segments: [(index: Int, start: Double, end: Double, bytes: Int)] = []
        var peakBandwidth = 0
        var frames = 0
        var width = 0
        var height = 0
        var codecString = ""
        var firstTime: Double? = nil
        var lastEnd: Double? = nil
    }

    let folder: URL
    let renditions: [TranscodePlan.Rendition]
    let makesMP4: Bool
    let makesSegments: Bool
    private var mp4s: [String: MP4] = [:]
    private var finishedMP4s: Set<String> = []
    private var records: [String: Record] = [:]
    private var hasAudio = false
    private var still = false
    private var deinterlaced = false
    private var toneMapped = false
    private var sourceFrames = 0
    /// Whether the previews were made (by the preview pass).
    var madePreviews = false

    init(folder: URL, settings: TranscodeSettings, renditions: [TranscodePlan.Rendition]) {
        self.folder = folder
        self.renditions = renditions
        makesMP4 = settings.makesMP4
        makesSegments = settings.makesSegments
    }

    /// The MP4 of rendition `name`, opened by the first segment from its encoders (every segment's encoders have
    /// the same settings, so the same parameter sets); nil when the batch makes no MP4s.
    func mp4(of name: String, video: UnsafeMutablePointer<AVCodecContext>,
             audio: UnsafeMutablePointer<AVCodecContext>?) throws -> MP4? {
        guard makesMP4 else { return nil }
        if let open = mp4s[name] { return open }
        let path = folder.appendingPathComponent(ItemFile.mp4(rendition: name).path).path
        let temporary = AtomicFile.temporaryPath(for: path)
        let writer = try MediaWriter(.file(temporary, format: "mp4", options: ["movflags": "+faststart"]), item: path)
        let open = MP4(writer: writer, videoStream: try writer.addStream(from: video),
                       audioStream: try audio.map { try writer.addStream(from: $0) }, path: path, temporary: temporary)
        mp4s[name] = open
        try writer.begin()
        return open
    }

    /// Takes one segment of every rendition: writes its file (and the rendition's `init.mp4` with the first) and
    /// notes what the report needs.
    func add(_ made: [TranscodedSegment], from pipeline: Pipeline) throws {
        hasAudio = pipeline.audioEncoder != nil
        still = still || pipeline.still
        deinterlaced = deinterlaced || pipeline.deinterlaced
        toneMapped = toneMapped || pipeline.toneMapped
        sourceFrames += pipeline.windowFrames
        for (segment, output) in zip(made, pipeline.outputs) {
            var record = records[output.name] ?? Record()
            record.segments += output.segments
            record.peakBandwidth = max(record.peakBandwidth, output.peakBandwidth)
            record.frames += output.frames
            if record.width == 0 { (record.width, record.height) = (output.width, output.height) }
            record.codecString = output.codecString
            record.firstTime = record.firstTime ?? output.firstTime
            if let end = output.lastEnd { record.lastEnd = max(record.lastEnd ?? end, end) }
            if makesSegments {
                let rungFolder = folder.appendingPathComponent(output.name)
                if records[output.name] == nil {
                    do {
                        try FileManager.default.createDirectory(at: rungFolder, withIntermediateDirectories: true)
                    } catch {
                        throw MediaError(.io, operation: "create folder", item: rungFolder.path,
                                         message: error.localizedDescription)
                    }
                    try AtomicFile.write(segment.initialization, to: folder.appendingPathComponent(
                        ItemFile.initialization(rendition: output.name).path).path)
                }
                try AtomicFile.write(segment.media, to: folder.appendingPathComponent(
                    ItemFile.segment(rendition: output.name, index: segment.index).path).path)
            }
            records[output.name] = record
        }
    }

    /// Writes each MP4's index (at the front) and renames it into place.
    func finishMP4s() throws {
        for (name, mp4) in mp4s.sorted(by: { $0.key < $1.key }) where !finishedMP4s.contains(name) {
            _ = try mp4.writer.finish()
            guard rename(mp4.temporary, mp4.path) == 0 else {
                throw MediaError(.io, operation: "write", item: mp4.path, message: String(cString: strerror(errno)))
            }
            finishedMP4s.insert(name)
        }
    }

    /// Removes the MP4s not renamed into place (the run failed).
    func discardTemporaries() {
        for (name, mp4) in mp4s where !finishedMP4s.contains(name) { unlink(mp4.temporary) }
    }

    /// The playlists (written) and the report.
    func report(plan: TranscodePlan) throws -> TranscodeReport {
        var made: [TranscodeReport.Rendition] = []
        let audioCodec = hasAudio ? "," + CodecString.aacLC : ""
        for rung in renditions {
            guard let record = records[rung.name] else { continue }
            var playlist: String? = nil, initSegment: String? = nil
            var names: [String] = [], durations: [Double] = []
            let sorted = record.segments.sorted { $0.index < $1.index }
            if makesSegments {
                // Each segment spans from its boundary to the next one's (the first from 0, so audio that
                // starts before the video is inside it; the last to the end of its audio or video).
                let grid = plan.grid
                for (n, s) in sorted.enumerated() {
                    names.append(ItemFile.segment(rendition: rung.name, index: s.index).path)
                    let start = n == 0 ? 0 : grid.start(s.index)
                    let next = n + 1 < sorted.count ? grid.start(sorted[n + 1].index) : s.end
                    durations.append(max(0.001, next - start))
                }
                if !sorted.isEmpty {
                    initSegment = ItemFile.initialization(rendition: rung.name).path
                    playlist = ItemFile.mediaPlaylist(rendition: rung.name).path
                    let text = HLSPlaylist.media(initSegment: ItemFile.initialization(rendition: rung.name).name,
                                                 segments: sorted.enumerated().map {
                        (ItemFile.segment(rendition: rung.name, index: $0.element.index).name, durations[$0.offset])
                    })
                    try AtomicFile.write(Array(text.utf8), to: folder.appendingPathComponent(playlist!).path)
                }
            }
            let first = record.firstTime ?? 0
            let duration = max(0, (record.lastEnd ?? first) - first)
            let bytes = sorted.reduce(0) { $0 + $1.bytes }
            let average = duration > 0 ? Int(Double(bytes * 8) / duration) : 0
            made.append(TranscodeReport.Rendition(
                name: rung.name, width: record.width, height: record.height,
                mp4: mp4s[rung.name].map { _ in ItemFile.mp4(rendition: rung.name).path }, playlist: playlist,
                initSegment: initSegment, segments: names, segmentDurations: durations,
                bandwidth: max(record.peakBandwidth, average), averageBandwidth: average, duration: duration,
                frames: record.frames, codecs: record.codecString + audioCodec))
        }
        var master: String? = nil
        if made.contains(where: { $0.playlist != nil }) {
            let text = HLSPlaylist.multivariant(made.compactMap { r in
                r.playlist.map { ($0, r.bandwidth, r.averageBandwidth, r.width, r.height, r.codecs) }
            })
            try AtomicFile.write(Array(text.utf8), to: folder.appendingPathComponent(ItemFile.masterPlaylist.path).path)
            master = ItemFile.masterPlaylist.path
        }
        return TranscodeReport(renditions: made, masterPlaylist: master,
                               previewMP4: madePreviews ? ItemFile.preview.path : nil,
                               previewWebP: madePreviews ? ItemFile.previewWebP.path : nil, hasAudio: hasAudio,
                               wasStill: still, deinterlaced: deinterlaced, toneMapped: toneMapped,
                               sourceFrames: still ? 1 : sourceFrames)
    }
}
