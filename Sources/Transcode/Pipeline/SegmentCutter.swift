internal import CFFmpeg
import Foundation
import Media

/// Cuts one rendition's encoded packets into CMAF media segments at the fixed boundaries of a ``SegmentGrid``.
///
/// A video packet belongs to the segment of the last keyframe at or after a boundary before it (the encoder was
/// told to make one at each boundary, so a segment starts with an IDR picture); an audio packet to the segment its
/// time falls in. Segment *k* is written once the video has moved past it and the audio has reached its end (or a
/// stream ended), so a segment always holds all of both.
final class SegmentCutter {
    struct Segment {
        var index: Int
        var bytes: [UInt8]
        var start: Double
        var end: Double
        var frames: Int
    }

    private let writer: MediaWriter
    private let videoStream: Int
    private let audioStream: Int?
    private let grid: SegmentGrid
    /// On demand: every packet belongs to this one segment.
    private let only: Int?
    private var video: [(segment: Int, packet: Packet, start: Double, end: Double, decode: Double)] = []
    private var audio: [(time: Double, packet: Packet)] = []
    private var currentSegment: Int? = nil
    private var audioReached = -Double.infinity
    private var videoEnded = false
    private var audioEnded = false
    private var nextToEmit: Int? = nil
    /// The initialisation segment, once the first fragment was cut.
    private(set) var initialization: [UInt8]? = nil
    private let emit: (Segment) throws -> Void

    init(writer: MediaWriter, videoStream: Int, audioStream: Int?, grid: SegmentGrid, only: Int?,
         emit: @escaping (Segment) throws -> Void) {
        self.writer = writer
        self.videoStream = videoStream
        self.audioStream = audioStream
        self.grid = grid
        self.only = only
        self.emit = emit
        if audioStream == nil { audioEnded = true }
    }

    /// A video packet in decode order: `time` its presentation time, `decodeTime` its decode time (both in seconds,
    /// on one timeline), `duration` how long it shows.
    func addVideo(_ packet: Packet, time: Double, decodeTime: Double, duration: Double) throws {
        let segment: Int
        if let only {
            segment = only
        } else if let current = currentSegment {
            let boundary = grid.index(at: time)
            segment = packet.isKey && boundary > current ? boundary : current
        } else {
            segment = grid.index(at: time)
        }
        if nextToEmit == nil { nextToEmit = segment }
        currentSegment = segment
        video.append((segment, packet, time, time + duration, decodeTime.isFinite ? decodeTime : time))
        try emitReady()
    }

    func addAudio(_ packet: Packet, time: Double) throws {
        audio.append((time, packet))
        audioReached = max(audioReached, time)
        try emitReady()
    }

    func endVideo() throws {
        videoEnded = true
        try emitReady()
    }

    func endAudio() throws {
        audioEnded = true
        try emitReady()
    }

    private func emitReady() throws {
        while let s = nextToEmit {
            let videoPast = videoEnded || (currentSegment ?? Int.min) > s
            let isLast = videoEnded && !video.contains { $0.segment > s }
            let audioPast = audioEnded || audioReached >= grid.end(s)
            // The last segment takes the rest of the audio: it waits for the audio's end (the encoder's flush).
            guard videoPast, isLast ? audioEnded : audioPast else { return }
            let frames = video.filter { $0.segment == s }
            guard !frames.isEmpty || !isLast || !audio.isEmpty else { return }
            let start = frames.map(\.start).min() ?? grid.start(s)
            var end = frames.map(\.end).max() ?? start
            if frames.count > 1 {
                // As the fragment shows it: a sample lasts until the next one's decode time (the last for its own
                // duration). With reordered pictures at a frame-rate change the last picture shown can be given
                // less than its own duration; a player's buffered range ends where this says.
                end = frames.indices.map { i in
                    let lasts = i + 1 < frames.count ? frames[i + 1].decode - frames[i].decode
                                                     : frames[i].end - frames[i].start
                    return frames[i].start + lasts
                }.max() ?? end
            }
            for entry in frames { try writer.write(entry.packet, stream: videoStream, interleaved: false) }
            video.removeAll { $0.segment == s }
            if let audioStream {
                let limit = (isLast || only != nil) ? Double.infinity : grid.end(s)
                let taken = audio.filter { $0.time < limit }
                for entry in taken { try writer.write(entry.packet, stream: audioStream, interleaved: false) }
                audio.removeAll { $0.time < limit }
                if isLast, let lastAudio = taken.last?.time { end = max(end, min(lastAudio, end + 0.1)) }
            }
            var bytes = try writer.cutFragment()
            if initialization == nil {
                // With `delay_moov` the first cut writes only the header; the fragment follows at the next.
                let parts = MediaWriter.splitInitialization(bytes)
                initialization = parts.initialization
                bytes = parts.media.isEmpty ? try writer.cutFragment() : parts.media
            }
            try emit(Segment(index: s, bytes: bytes, start: start, end: end, frames: frames.count))
            if isLast {
                nextToEmit = nil
                return
            }
            nextToEmit = video.first?.segment ?? (s + 1)
            if video.isEmpty && !videoEnded { nextToEmit = currentSegment.map { max($0, s + 1) } }
        }
    }
}
