internal import CFFmpeg
import Foundation
import Media

/// One pass of the decode → filter → encode → mux chain, in the stages of FFmpeg's doc/examples/transcode.c, one
/// file each:
/// - opening the input's decoders and the audio chain (here, `init`), then reading and decoding the window's
///   packets (`Pipeline+Read.swift`);
/// - building the filter graph at the first picture, one branch per output (`Pipeline+Filters.swift`);
/// - opening the encoders and writers and handing them packets (`Pipeline+Encode.swift`, ``Output``);
/// - flushing decoders, graph and encoders at the end (`Pipeline+Flush.swift`).
///
/// What it makes is its ``Pass``; what it learns of the item for the passes after it goes into the transcoder's
/// ``ItemMemory``.
final class Pipeline {
    let pass: Pass
    let file: MediaFile
    let settings: TranscodeSettings
    let plan: TranscodePlan
    let memory: ItemMemory
    let item: String
    var window: Pass.Window { pass.window }
    var rungs: [Int] { pass.rungs }

    let video: StreamDecoder
    let audio: StreamDecoder?
    var converter: AudioConverter?
    var audioEncoder: AudioEncoder?
    var graph: FilterGraph?
    /// How the graph was built, to rebuild it for pictures of another shape.
    var graphSetup: (description: String, timeBase: AVRational, frameRate: AVRational, outputs: Int,
                     shape: [Int32])? = nil
    /// The first picture, held until a second shows that the stream is a video (or the end that it is a still).
    var held: Frame?
    var outputs: [Output] = []
    /// Each output's thread (``EncoderLane``), beside `outputs`: the outputs are the lanes' until `pump` joins them.
    var lanes: [EncoderLane] = []
    /// Audio packets encoded before the first picture made the outputs.
    var queuedAudio: [Packet] = []
    var videoDone = false
    var audioDone = false
    var finishedAudio = false
    var videoOrigin: Int64 = 0
    var deinterlaced = false
    var toneMapped = false
    /// Source frames inside the window.
    var windowFrames = 0
    /// Frames given to an initialisation pass so far.
    var initFrames = 0
    /// Whether the first picture after a seek was checked against the window's start.
    var landingChecked = false
    /// Thrown at the first picture decoded after the seek when it is past the window's start.
    struct LandedPastWindow: Error {}
    /// Whether the decoded frames' presentation times have risen so far, each the frame's own packet's (see
    /// `videoFrameReady`), and the last of them.
    var prerollTimesRise = true
    var lastPrerollPTS: Int64? = nil
    /// The preview files written under temporary names, renamed into place when the pass ends.
    var previewFiles: [(temporary: String, path: String)] = []
    /// Temporary files removed when the pipeline goes, unless renamed into place.
    var temporaries: [String] = []

    /// Opens the input's side of `pass` over `transcoder`'s file: the video decoder (or the batch's that carries
    /// on), the audio decoder, resampler and AAC encoder when a rendition is made.
    init(_ pass: Pass, of transcoder: Transcoder) throws {
        self.pass = pass
        file = transcoder.file
        settings = transcoder.settings
        plan = transcoder.plan
        memory = transcoder.memory
        item = file.item
        video = try pass.continuous?.decoder
            ?? StreamDecoder(file: file, stream: plan.videoStream, threads: settings.threads)
        if pass.continuous != nil { landingChecked = true }
        if let index = plan.audioStream, !pass.rungs.isEmpty {
            // An audio track FFmpeg cannot decode leaves the renditions silent, not failed.
            audio = try? StreamDecoder(file: file, stream: index, threads: 1)
        } else {
            audio = nil
        }
        audioDone = audio == nil
        let stream = file.stream(at: plan.videoStream)
        videoOrigin = Pipeline.ticks(file.info.startTime, stream.pointee.time_base)
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
                                           start: pass.window.start, end: pass.window.end, item: item)
            audioEncoder = encoder
        }
    }

    deinit {
        for path in temporaries { unlink(path) }
    }

    /// Whether the window's preroll may skip pictures nothing refers to: a window after the item's start, an H.264
    /// stream from MP4/MOV. The seek lands on the keyframe before the window, up to a GOP earlier (8.3 s for x264's
    /// defaults at 30 fps), and every picture from there is decoded only for the window's pictures to refer to;
    /// one that nothing refers to (a B-picture of x264's, 40 % of a typical stream's) would be decoded and dropped.
    /// MP4/MOV gives every packet a presentation time, so a picture's place is known before it is decoded, and no
    /// picture in the window needs the frame-count fallback for a missing timestamp (which skipped pictures would
    /// shift). Other containers and codecs decode every picture.
    lazy var skipsPreroll: Bool = {
        guard memory.skipsPreroll, pass.continuous == nil, window.start > 0, !pass.isInitialization, !plan.isStill,
              video.codecID == AV_CODEC_ID_H264,
              let name = file.context.pointee.iformat?.pointee.name else { return false }
        return String(cString: name).hasPrefix("mov,")
    }()

    // MARK: Running a pass

    /// The window's segment of every rendition, in the order of the pass's rungs.
    func runSegments() throws -> [TranscodedSegment] {
        // A still has one picture: no seek, its frames are made from it.
        // With a continuous decoder the seek is for the audio only, which then starts where a segment alone reads it.
        if window.start > 0, !plan.isStill, !pass.readsFromStart, pass.continuous == nil || audio != nil {
            try seek(to: window.start)
        }
        try pump()
        var made: [TranscodedSegment] = []
        for output in outputs {
            guard case .rendition = output.kind else { continue }
            if window.index == 0, let first = output.firstPTS, memory.firstPictureTime[output.name] == nil {
                memory.firstPictureTime[output.name] = first
            }
            guard var segment = output.made else {
                throw MediaError(.invalidData, operation: "transcode", item: item,
                                 message: "segment \(window.index) has no frames")
            }
            segment.codecs = output.codecs(hasAudio: audioEncoder != nil)
            made.append(segment)
        }
        guard made.count == rungs.count else {
            throw MediaError(.invalidData, operation: "transcode", item: item,
                             message: "segment \(window.index) has no frames")
        }
        return made
    }

    /// The previews of a preview pass: made, then renamed into place.
    func runPreviews() throws {
        try pump()
        for file in previewFiles {
            guard rename(file.temporary, file.path) == 0 else {
                throw MediaError(.io, operation: "write", item: file.path, message: String(cString: strerror(errno)))
            }
            temporaries.removeAll { $0 == file.temporary }
        }
    }

    /// Reads every packet of the window, decodes, filters, encodes and muxes; then drains everything. Each output
    /// encodes on its own lane; they are joined before this returns, and abandoned when it throws.
    func pump() throws {
        do {
            try readPackets()
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

    // MARK: Arithmetic

    /// AAC's sample rates up to 48 kHz are kept; others become 48 kHz.
    static func outputRate(_ rate: Int) -> Int {
        [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000].contains(rate) ? rate : 48000
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

    func temporary(for path: String) -> String {
        let temp = AtomicFile.temporaryPath(for: path)
        temporaries.append(temp)
        return temp
    }
}
