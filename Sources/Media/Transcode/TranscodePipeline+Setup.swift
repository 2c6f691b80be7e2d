internal import CFFmpeg
import Foundation

/// Setting a pipeline up at its first picture: the filter graph, each output's encoder and writers, the audio chain.
extension Pipeline {
    // MARK: Setting up

    func configure(first: UnsafeMutablePointer<AVFrame>, still: Bool) throws {
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

    func makeRendition(graph: FilterGraph, sink: Int, rung: TranscodePlan.Rendition,
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

    /// The filters before the split: deinterlace, frame-rate cap.
    func prefilters(first: UnsafeMutablePointer<AVFrame>, info: StreamInfo, still: Bool) -> String {
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

    /// How an HDR picture (PQ or HLG) is tone-mapped to SDR BT.709 (``ToneMap``); nil for SDR or with tone mapping
    /// off.
    func toneMapping(first: UnsafeMutablePointer<AVFrame>) -> ToneMap? {
        settings.toneMapsHDR ? ToneMap.of(first) : nil
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

    func temporary(for path: String) -> String {
        let temp = AtomicFile.temporaryPath(for: path)
        temporaries.append(temp)
        return temp
    }
}
