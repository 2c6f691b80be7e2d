internal import CFFmpeg
import Foundation
import Media

/// Encoding and writing: an output per graph branch (its encoder, its segment cutter, the whole file its packets
/// also go into), and the audio, encoded once, handed to every output.
extension Pipeline {
    /// The outputs fed by the graph's branches, in the branches' order: the pass's renditions, then a preview
    /// pass's MP4 and WebP.
    func openOutputs(sourceRate: AVRational) throws -> [Output] {
        guard let graph else { return [] }
        var made: [Output] = []
        for (i, r) in rungs.enumerated() {
            made.append(try openRendition(graph: graph, sink: i, rung: plan.renditions[r], sourceRate: sourceRate))
        }
        if let folder = pass.previewFolder, let preview = settings.preview {
            made += try openPreviews(graph: graph, firstSink: rungs.count, preview: preview, folder: folder,
                                     sourceRate: sourceRate)
        }
        return made
    }

    func openRendition(graph: FilterGraph, sink: Int, rung: TranscodePlan.Rendition,
                       sourceRate: AVRational) throws -> Output {
        let size = graph.size(of: sink)
        let timeBase = graph.timeBase(of: sink)
        let frameRate = Pipeline.rate(graph.frameRate(of: sink), or: sourceRate)
        memory.encodedPictures[rung.name] = (size.width, size.height, av_q2d(frameRate))
        let encoder = try VideoEncoder(width: size.width, height: size.height, timeBase: timeBase,
                                       frameRate: frameRate,
                                       codec: rung.videoCodec, encoding: settings.video, av1: settings.av1,
                                       maxBitrate: rung.maxBitrate, globalHeader: true, item: item)
        encoder.isCancelled = { [file] in file.isCancelled }
        // A batch's MP4 of this rendition, which every segment's packets go into (opened by the first segment,
        // finished by the batch).
        let mp4 = try pass.batch?.mp4(of: rung.name, video: encoder.context, audio: audioEncoder?.context)
        let output = Output(kind: .rendition(rung), encoder: .video(encoder), file: mp4?.file, grid: plan.grid,
                            timeBase: timeBase, name: rung.name)
        if window.index > 0 {
            output.fragmentShift = fragmentShift(videoTimeBase: timeBase,
                                                 firstPicture: memory.firstPictureTime[rung.name])
        }
        let writer = try MediaWriter(.fragments(options: ["movflags": "frag_custom+dash+delay_moov"
                                                            + (window.index > 0 ? "+frag_discont" : "")]),
                                     item: item)
        let v = try writer.addStream(from: encoder.context)
        let a = try audioEncoder.map { try writer.addStream(from: $0.context) }
        try writer.begin()
        output.cutter = SegmentCutter(writer: writer, videoStream: v, audioStream: a, grid: plan.grid,
                                      only: window.index) { [unowned output] segment in
            Pipeline.store(segment, of: output)
        }
        return output
    }

    /// The preview's MP4 and animated WebP, each written under a temporary name (renamed by ``runPreviews()``).
    func openPreviews(graph: FilterGraph, firstSink: Int, preview: PreviewSettings, folder: URL,
                      sourceRate: AVRational) throws -> [Output] {
        let mp4Sink = firstSink, webpSink = firstSink + 1
        let size = graph.size(of: mp4Sink)
        let encoder = try VideoEncoder(width: size.width, height: size.height, timeBase: graph.timeBase(of: mp4Sink),
                                       frameRate: Pipeline.rate(graph.frameRate(of: mp4Sink), or: sourceRate),
                                       encoding: settings.video,
                                       maxBitrate: Int(Double(size.width * size.height) * settings.maxBitsPerPixel),
                                       globalHeader: true, item: item)
        encoder.isCancelled = { [file] in file.isCancelled }
        let webpSize = graph.size(of: webpSink)
        let webpTimeBase = graph.timeBase(of: webpSink)
        let webp = try WebPEncoder(width: webpSize.width, height: webpSize.height, timeBase: webpTimeBase,
                                   quality: preview.webpQuality, item: item)
        return [
            Output(kind: .preview, encoder: .video(encoder),
                   file: try openPreviewFile(folder.appendingPathComponent(ItemFile.preview.path).path, format: "mp4",
                                             options: ["movflags": "+faststart"], encoder: encoder.context),
                   grid: nil, timeBase: graph.timeBase(of: mp4Sink), name: "preview"),
            Output(kind: .preview, encoder: .webp(webp),
                   file: try openPreviewFile(folder.appendingPathComponent(ItemFile.previewWebP.path).path,
                                             format: "webp", options: ["loop": "0"], encoder: webp.context),
                   grid: nil, timeBase: webpTimeBase, name: "preview-webp"),
        ]
    }

    /// A preview's file at `path`, written under a temporary name (renamed by ``runPreviews()``) with one video stream.
    func openPreviewFile(_ path: String, format: String, options: [String: String],
                         encoder: UnsafeMutablePointer<AVCodecContext>) throws -> Output.WholeFile {
        let temp = temporary(for: path)
        let writer = try MediaWriter(.file(temp, format: format, options: options), item: item)
        let stream = try writer.addStream(from: encoder)
        try writer.begin()
        previewFiles.append((temp, path))
        return Output.WholeFile(writer: writer, videoStream: stream, audioStream: nil, finishedByOutput: true)
    }

    /// What a segment after the first adds to its packets' timestamps (video, in `videoTimeBase`; audio, in the
    /// AAC encoder's) so that its fragment lies on the media timeline the first segment's muxer set up.
    ///
    /// Segment 0 is muxed as the start of the stream: each track's media time is its decode time less its first
    /// packet's, and the init's edit list shows that from the track's first presentation time (video: its first
    /// picture, after an empty edit when it starts after the audio; audio: past the encoder's priming). A later
    /// segment is muxed with `frag_discont`, which takes the track's media time to be its presentation time (less
    /// the first packet's lead, `decodeLead` for video). The shift is the difference: minus the first picture's time
    /// for video (learnt by the pass that started at the beginning: ``Transcoder/segments(_:renditions:origin:)`` makes
    /// the init first, a batch segment 0; the stream's header start otherwise, which a stream whose first pictures
    /// do not decode contradicts); the priming less the audio grid's start for audio.
    func fragmentShift(videoTimeBase: AVRational, firstPicture: Int64?) -> (video: Int64, audio: Int64) {
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

    static func store(_ segment: SegmentCutter.Segment, of output: Output) {
        let bits = Double(segment.bytes.count * 8)
        output.segments.append((segment.index, segment.start, segment.end, segment.bytes.count))
        output.peakBandwidth = max(output.peakBandwidth, Int(bits / max(segment.end - segment.start, 0.1)))
        output.made = TranscodedSegment(index: segment.index, initialization: output.cutter?.initialization ?? [],
                                        media: segment.bytes, start: segment.start,
                                        duration: segment.end - segment.start, frames: segment.frames, codecs: "")
    }

    /// Hands encoded audio to every output, trimmed to the window: before the outputs exist, it waits for them.
    func audioPackets(_ packets: [Packet]) throws {
        var packets = packets
        if window.index > 0, let start = converter?.startSample {
            // A segment made alone starts with the encoder's priming frame, which the segment before holds already.
            packets.removeAll { $0.pts < start }
        }
        if let cut = converter?.cutSample {
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
