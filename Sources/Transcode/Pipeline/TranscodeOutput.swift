internal import CFFmpeg
import Foundation
import Media

/// One output branch of the graph: an encoder and where its packets go.
final class Output {
    enum Kind {
        case rendition(TranscodePlan.Rendition)
        case preview
    }

    enum Encoder {
        case video(VideoEncoder)
        case webp(WebPEncoder)
    }

    /// A whole file this output's packets also go into: a batch's MP4 of the rendition (every segment's packets,
    /// finished by the batch) or a preview's MP4 or WebP (finished by this output when its streams end).
    struct WholeFile {
        let writer: MediaWriter
        let videoStream: Int
        let audioStream: Int?
        let finishedByOutput: Bool
    }

    let kind: Kind
    let encoder: Encoder
    let file: WholeFile?
    /// The segment cutter of a rendition (its CMAF fragments); nil for a preview.
    var cutter: SegmentCutter?
    /// Where segments begin (a keyframe is forced at each boundary); nil for outputs without segments.
    let grid: SegmentGrid?
    let timeBase: AVRational
    let name: String
    var frames = 0
    var lastPTS: Int64? = nil
    /// Frame durations by timestamp until their packets come out; the last gap between frames.
    var durations: [Int64: Int64] = [:]
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
    var videoFinished = false
    var audioEnded = false

    static func shift(_ packet: Packet, by ticks: Int64) {
        guard ticks != 0 else { return }
        let raw = packet.raw
        if raw.pointee.pts != vf_nopts_value() { raw.pointee.pts = raw.pointee.pts.addingReportingOverflow(ticks).partialValue }
        if raw.pointee.dts != vf_nopts_value() { raw.pointee.dts = raw.pointee.dts.addingReportingOverflow(ticks).partialValue }
    }

    init(kind: Kind, encoder: Encoder, file: WholeFile?, grid: SegmentGrid?, timeBase: AVRational, name: String) {
        self.kind = kind
        self.encoder = encoder
        self.file = file
        self.grid = grid
        self.timeBase = timeBase
        self.name = name
    }

    var codecString: String {
        if case .video(let e) = encoder { return e.codecString }
        return "webp"
    }

    func codecs(hasAudio: Bool) -> String { codecString + (hasAudio ? "," + CodecString.aacLC : "") }

    var seconds: Double { Double(timeBase.num) / Double(max(timeBase.den, 1)) }

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

    func encodeRaw(_ frame: UnsafeMutablePointer<AVFrame>?) throws -> [Packet] {
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
    var nominalFrameTicks: Int64 {
        guard case .video(let e) = encoder else { return 1 }
        let rate = e.context.pointee.framerate
        guard rate.num > 0, rate.den > 0 else { return 1 }
        return max(1, av_rescale_q(1, AVRational(num: rate.den, den: rate.num), timeBase))
    }
    /// The first packet's presentation time, and the shift given to it and to the packets before it in time.
    var leadIn: (pts: Int64, shift: Int64)? = nil
    var lastDTS: Int64? = nil

    /// Gives the packets decode times whose lead over presentation is the same in every encoder session.
    ///
    /// x264 derives its first packets' decode times from the gaps between the first few frames it is given (its
    /// reordering delay in time), so a session started at a segment of a variable-rate source, or at one with fewer
    /// frames than that delay, leads by another amount than the session the init came from. The MP4 muxer writes
    /// that first lead into the init's edit list and shows every fragment through it: a segment made with another
    /// lead would be shown early or late. The first packet (and those before it in time) take `decodeLead`; later
    /// packets keep x264's decode times, moved up a tick where that keeps them rising.
    func normaliseDecodeTime(_ packet: Packet) {
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

    func deliver(_ packets: [Packet]) throws {
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
            if let file { try file.writer.write(packet, stream: file.videoStream, interleaved: true) }
        }
    }

    func audio(_ packet: Packet) throws {
        let tb = packet.raw.pointee.time_base
        let time = Double(packet.pts) * Double(tb.num) / Double(max(tb.den, 1))
        if let file, let audioStream = file.audioStream, let copy = packet.clone() {
            try file.writer.write(copy, stream: audioStream, interleaved: true)
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
        if file?.audioStream == nil || cutter == nil { try finishIfDone(audioEnded: file?.audioStream == nil) }
    }

    func finishAudio() throws {
        audioEnded = true
        try cutter?.endAudio()
        try finishIfDone(audioEnded: true)
    }

    func finishIfDone(audioEnded: Bool) throws {
        guard videoFinished, audioEnded || file?.audioStream == nil, let file, file.finishedByOutput else { return }
        _ = try file.writer.finish()
    }
}
