package import CFFmpeg

/// Deinterlaces the frames of one ``VideoDecoder`` for showing them to a person: libavfilter's `bwdif`, the filter
/// and the per-item decision the transcoder uses, so a thumbnail, a player frame and a rendition of the same
/// interlaced source look alike (no comb on moving edges).
///
/// Decided once per item, at its first frame: an item whose first frame is flagged interlaced (or whose stream
/// declares a field order) goes through `bwdif=deint=interlaced`, which turns each flagged frame into one
/// progressive frame and passes the others through; any other item's frames are handed on untouched, with no graph.
/// `bwdif` needs the neighbouring frames to tell motion from detail, so its output lags one frame behind the
/// decoder. Raw dumps (framemd5) do not use it: they stay what the decoder gave, as ffmpeg's do.
///
/// Not thread-safe: one thread at a time, like its decoder. Owns its filter graph (``FilterGraph``).
public final class Deinterlacer {
    /// The filter chain: one progressive frame per frame (`send_frame`), field order from each frame, and only the
    /// frames flagged interlaced touched (`deint=interlaced`).
    package static let filter = "bwdif=mode=send_frame:parity=auto:deint=interlaced"

    /// Whether an item whose first decoded frame is `first` needs deinterlacing: the frame is flagged interlaced,
    /// or the stream declares an interlaced field order (`fieldOrder` other than progressive or unknown).
    package static func isNeeded(first: UnsafePointer<AVFrame>, fieldOrder: AVFieldOrder) -> Bool {
        vf_frame_is_interlaced(first) != 0 || fieldOrder == AV_FIELD_TT || fieldOrder == AV_FIELD_BB
            || fieldOrder == AV_FIELD_TB || fieldOrder == AV_FIELD_BT
    }

    /// The decoder whose frames this deinterlacer shows.
    public let decoder: VideoDecoder
    /// Whether this item is deinterlaced; nil until its first frame was seen.
    public private(set) var isActive: Bool?

    private var graph: FilterGraph?
    private var graphShape: [Int32] = []
    private var inputEnded = false
    /// Frames out of a graph that was closed because the picture changed shape, to be handed out first.
    private var pending: [VideoFrame] = []
    private var sequence = 0

    /// A deinterlacer over `decoder`'s frames.
    public init(decoder: VideoDecoder) {
        self.decoder = decoder
    }

    /// Whether this item is deinterlaced: decided at the first frame this deinterlacer sees (`frame`, when none was
    /// seen yet) and kept for the item.
    public func isActive(deciding frame: VideoFrame) -> Bool {
        if let isActive { return isActive }
        let needed = Self.isNeeded(first: frame.frame, fieldOrder: decoder.fieldOrder)
        isActive = needed
        return needed
    }

    /// The next frame as a person should see it, or nil at the end of the stream: ``VideoDecoder/nextFrame()``,
    /// deinterlaced when this item is interlaced.
    /// - Throws: ``MediaError`` as ``VideoDecoder/nextFrame()`` does, and `invalidArgument`/`limitExceeded` when
    ///   libavfilter cannot set up or run `bwdif`.
    public func nextFrame() throws -> VideoFrame? {
        while true {
            if !pending.isEmpty { return pending.removeFirst() }
            if let graph {
                if let frame = try pull(graph) { return frame }
                if inputEnded { return nil }
            }
            guard let frame = try decoder.nextFrame() else {
                guard let graph, !inputEnded else { return nil }
                inputEnded = true
                try graph.push(nil)
                continue
            }
            guard isActive(deciding: frame) else { return frame }
            try push(frame)
        }
    }

    /// Moves the decoder to `seconds` (``VideoDecoder/seek(to:mode:)``) and forgets the frames `bwdif` holds, so
    /// that the next frame is the decoder's next one. Whether the item is deinterlaced stays decided.
    public func seek(to seconds: Double, mode: SeekMode) throws {
        try decoder.seek(to: seconds, mode: mode)
        graph = nil
        pending = []
        inputEnded = false
        sequence = 0
    }

    /// `frame` as a person should see it, deinterlaced with `next` (the frame after it, nil at the end of the
    /// stream) as its temporal neighbour when this item is interlaced; `frame` itself otherwise. For a picture taken
    /// alone, a thumbnail: `bwdif` on one frame without a neighbour sees no motion and keeps the comb.
    /// Does not touch the decoder or the frames ``nextFrame()`` has in flight.
    /// - Throws: ``MediaError`` `invalidArgument`/`limitExceeded` when libavfilter cannot set up or run `bwdif`.
    public func deinterlace(_ frame: VideoFrame, next: VideoFrame?) throws -> VideoFrame {
        guard isActive(deciding: frame) else { return frame }
        let graph = try makeGraph(first: frame)
        try graph.push(frame.frame)
        if let next, FilterGraph.shape(next.frame) == FilterGraph.shape(frame.frame) { try graph.push(next.frame) }
        try graph.push(nil)
        guard let shown = try pull(graph, sequenceNumber: frame.sequenceNumber) else {
            throw MediaError(.invalidData, operation: "deinterlace", item: decoder.file.item,
                             message: "bwdif gave no frame")
        }
        return shown
    }

    /// Pushes one decoded frame into the graph, first closing a graph made for another picture shape.
    private func push(_ frame: VideoFrame) throws {
        let shape = FilterGraph.shape(frame.frame)
        if let old = graph, shape != graphShape {
            // bwdif holds the last frame of the old shape: let it out before the new graph starts.
            try old.push(nil)
            while let out = try pull(old) { pending.append(out) }
            graph = nil
        }
        if graph == nil {
            graph = try makeGraph(first: frame)
            graphShape = shape
        }
        try graph!.push(frame.frame)
    }

    private func makeGraph(first: VideoFrame) throws -> FilterGraph {
        let stream = decoder.file.stream(at: decoder.stream.index)
        return try FilterGraph("[in]" + Self.filter + "[out0]", input: first.frame, timeBase: stream.pointee.time_base,
                               frameRate: stream.pointee.avg_frame_rate, outputs: 1, threads: 1,
                               item: decoder.file.item)
    }

    /// The graph's next frame as a ``VideoFrame`` on the decoder's clock, or nil when it needs input or ended.
    private func pull(_ graph: FilterGraph, sequenceNumber: Int? = nil) throws -> VideoFrame? {
        guard case .output(let out) = try graph.pull(0) else { return nil }
        guard let raw = av_frame_alloc() else {
            throw MediaError(.limitExceeded, operation: "deinterlace", item: decoder.file.item,
                             message: "out of memory")
        }
        av_frame_move_ref(raw, out.raw)
        // bwdif halves the time base and doubles `pts`; the decoder's timestamp (`best_effort_timestamp`) and
        // duration come through as they were, on the stream's clock. Put `pts` back on that clock too.
        let stream = decoder.file.stream(at: decoder.stream.index)
        if raw.pointee.pts != vf_nopts_value() {
            raw.pointee.pts = av_rescale_q(raw.pointee.pts, graph.timeBase(of: 0), stream.pointee.time_base)
        }
        defer { sequence += 1 }
        return VideoFrame(takingOwnership: raw, timeBase: stream.pointee.time_base,
                          startTime: decoder.file.info.startTime, sequenceNumber: sequenceNumber ?? sequence,
                          streamOrientation: decoder.streamOrientation)
    }
}
