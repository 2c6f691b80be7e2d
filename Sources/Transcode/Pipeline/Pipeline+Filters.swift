internal import CFFmpeg
import Foundation
import Media

/// Building the filters: at the first picture, one libavfilter graph (deinterlace, frame-rate cap, then a split into
/// one branch per output that scales, tone-maps, adjusts and turns upright), rebuilt when the pictures change shape;
/// each picture pushed through it and each branch's frames handed to its output's lane.
extension Pipeline {
    /// Sets the pass up at its first picture: the graph, then the outputs it feeds, each on its own lane.
    func configure(first: UnsafeMutablePointer<AVFrame>, still: Bool) throws {
        let frameRate = try buildGraph(first: first, still: still)
        outputs = try openOutputs(sourceRate: frameRate)
        lanes = outputs.map { EncoderLane(name: "videofeed.encode.\($0.name)") }
        let queued = queuedAudio
        try eachOutput { output in
            for packet in queued { try output.audio(packet) }
        }
        queuedAudio = []
        // The audio may have ended (a segment's window passed) before the first picture made the outputs.
        if finishedAudio { try eachOutput { try $0.finishAudio() } }
    }

    /// Builds the graph for pictures like `first`: a branch per rendition of the pass, then the preview's MP4 and
    /// WebP branches for a preview pass. Returns the source's frame rate.
    func buildGraph(first: UnsafeMutablePointer<AVFrame>, still: Bool) throws -> AVRational {
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
        // Every segment is fitted from the item's first picture (a stream may change size midway); a pass
        // starting at the beginning learns it.
        if memory.itemDisplay == nil, pass.isInitialization || window.index == 0 { memory.itemDisplay = shown }
        let display = memory.itemDisplay ?? shown
        var branches: [String] = []
        let toneMap = settings.toneMapsHDR ? ToneMap.of(first) : nil
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
        if pass.previewFolder != nil, let preview = settings.preview {
            let size = TranscodePlan.fit(display, in: preview.box)
            let shaped = Pipeline.branch(width: size.width, height: size.height, orientation: info.orientation,
                                         adjustment: settings.adjustment, toneMap: toneMap,
                                         inputIsBT709: untaggedHD)
            branches.append("trim=end=\(preview.seconds)," + shaped)
            branches.append("trim=end=\(preview.seconds),fps=\(preview.webpFrameRate)," + shaped)
        }
        var description = "[in]" + prefilters(first: first, info: info, still: still)
        if branches.count == 1 {
            description += "," + branches[0] + "[out0]"
        } else {
            description += ",split=\(branches.count)" + branches.indices.map { "[s\($0)]" }.joined() + ";"
            description += branches.enumerated().map { "[s\($0.offset)]\($0.element)[out\($0.offset)]" }
                .joined(separator: ";")
        }
        graph = try FilterGraph(description, input: first, timeBase: timeBase, frameRate: frameRate,
                                outputs: branches.count, threads: settings.filterThreads, item: item)
        graphSetup = (description, timeBase, frameRate, branches.count, FilterGraph.shape(first))
        return frameRate
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

    /// One branch after the split: scale to the rendition's size in the stored orientation (tone-mapping HDR on the
    /// way, ``ToneMap``), 8-bit 4:2:0 BT.709 limited range, adjust, turn upright, square pixels. `inputIsBT709`
    /// names the matrix of a picture that does not say its own (libswscale would take BT.601); a BT.709 input is
    /// only resized, any other is converted.
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

    /// Pushes one picture through the graph and hands what comes out to the outputs.
    func filter(_ frame: UnsafeMutablePointer<AVFrame>) throws {
        try file.throwIfCancelled("transcode")
        frame.pointee.pict_type = AV_PICTURE_TYPE_NONE
        if let setup = graphSetup, graph != nil, FilterGraph.shape(frame) != setup.shape {
            // The stream changed size, pixel format or aspect midway (an ad break in a broadcast, a new SPS): the
            // graph was configured for the old pictures, so it is drained and built anew for the new ones, as the
            // ffmpeg CLI does. The branches keep their output sizes, so the encoders go on.
            try graph?.push(nil)
            try drainGraph()
            graph = try FilterGraph(setup.description, input: frame, timeBase: setup.timeBase,
                                    frameRate: setup.frameRate, outputs: setup.outputs, threads: settings.filterThreads,
                                    item: item)
            graphSetup?.shape = FilterGraph.shape(frame)
        }
        try graph?.push(frame)
        try drainGraph()
    }

    /// Hands every frame the graph's branches have ready to their outputs' lanes.
    func drainGraph() throws {
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
}
