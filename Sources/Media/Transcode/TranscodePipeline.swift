internal import CFFmpeg
import Foundation

/// One run of the decode → filter → encode → mux chain.
final class Pipeline {
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
    var lanes: [EncoderLane] = []
    var queuedAudio: [Packet] = []
    var videoDone = false
    var audioDone = false
    var videoOrigin: Int64 = 0
    var still = false
    var deinterlaced = false
    var toneMapped = false
    /// Source frames inside the window (all of them without one).
    var windowFrames = 0
    /// Only the first few video frames (for the initialisation segment).
    var firstFrameOnly = false
    /// Decode from the item's start instead of seeking to the window (the caller rewound the file).
    var fromStart = false
    var landingChecked = false
    /// Thrown at the first picture decoded after the seek when it is past the window's start.
    struct LandedPastWindow: Error {}
    var initFrames = 0
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

    func seek(to seconds: Double) throws {
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
    func pump() throws {
        do {
            try pumpPackets()
            for lane in lanes { try lane.join() }
        } catch {
            for lane in lanes { lane.abandon() }
            throw error
        }
    }

    /// Runs `body` with each output on the output's lane.
    func eachOutput(_ body: @escaping (Output) throws -> Void) throws {
        for (output, lane) in zip(outputs, lanes) {
            try lane.submit { try body(output) }
        }
    }

    func pumpPackets() throws {
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
    var prerollTimesRise = true
    var lastPrerollPTS: Int64? = nil

    /// Whether `packet` is a video picture before the window (by a margin of 50 ms: the frame's own timestamp is the
    /// packet's, compared with the window's start by `videoFrameReady`, which drops it) and not a keyframe, while
    /// the frames' times rise.
    func isPreroll(_ packet: UnsafeMutablePointer<AVPacket>) -> Bool {
        guard prerollTimesRise, let window, packet.pointee.pts != vf_nopts_value(),
              packet.pointee.flags & AV_PKT_FLAG_KEY == 0 else {
            return false
        }
        let shifted = packet.pointee.pts.subtractingReportingOverflow(videoOrigin)
        guard !shifted.overflow else { return false }
        let tb = video.timeBase
        return Double(shifted.partialValue) * Double(tb.num) / Double(max(tb.den, 1)) < window.start - 0.05
    }

    func decode(_ decoder: StreamDecoder, _ packet: UnsafeMutablePointer<AVPacket>?) throws {
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

    func videoFrame(_ frame: Frame) throws {
        if videoDone { return }
        if plan.isStill, transcoder.stillPicture == nil { transcoder.stillPicture = frame.clone() }
        try videoFrameReady(frame)
    }

    func videoFrameReady(_ frame: Frame) throws {
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

    func finishVideo() throws {
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

    func filter(_ frame: UnsafeMutablePointer<AVFrame>) throws {
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
    var graphSetup: (description: String, timeBase: AVRational, frameRate: AVRational, outputs: Int,
                             shape: [Int32])? = nil

    func drainGraph(ending: Bool) throws {
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

    func audioFrame(_ frame: Frame) throws {
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

    func finishAudio() throws {
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

    var finishedAudio = false

    func audioPackets(_ packets: [Packet]) throws {
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
}
