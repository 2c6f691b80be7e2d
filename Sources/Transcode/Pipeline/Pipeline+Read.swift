internal import CFFmpeg
import Foundation
import Media

/// Reading and decoding: the window's packets from the file (after a seek, from the item's start, or from the
/// batch's decoder that carries on), decoded, and the pictures inside the window handed to the filters.
extension Pipeline {
    func readPackets() throws {
        if plan.isStill, let picture = memory.stillPicture?.clone() {
            // The picture decoded by an earlier pass: nothing to read again.
            videoDone = true
            try videoFrameReady(picture)
            try finishVideo()
            return
        }
        guard let packet = Packet() else {
            throw MediaError(.limitExceeded, operation: "transcode", item: item, message: "out of memory")
        }
        if let continuous = pass.continuous {
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
        if pass.continuous == nil { video.flush() }
        audio?.flush()
    }

    /// Whether `packet` is a video picture before the window (by a margin of 50 ms: the frame's own timestamp is the
    /// packet's, compared with the window's start by `videoFrameReady`, which drops it) and not a keyframe, while
    /// the frames' times rise.
    func isPreroll(_ packet: UnsafeMutablePointer<AVPacket>) -> Bool {
        guard prerollTimesRise, packet.pointee.pts != vf_nopts_value(),
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

    func videoFrame(_ frame: Frame) throws {
        if videoDone { return }
        if plan.isStill, memory.stillPicture == nil { memory.stillPicture = frame.clone() }
        try videoFrameReady(frame)
    }

    /// Takes a decoded picture: on the item's timeline, dropped before the window, the end of the video past it,
    /// otherwise filtered (the first held until the second shows the stream is a video).
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
        if !pass.isInitialization, !plan.isStill {
            if !landingChecked {
                landingChecked = true
                // The seek landed past the window's start (no keyframe where the demuxer's search landed: an
                // MPEG-TS with long GOPs): the frames from the start to here would be lost. Start over from the
                // beginning of the item instead.
                if window.start > 0, !pass.readsFromStart, seconds > window.start + 0.0005 { throw LandedPastWindow() }
            }
            if seconds < window.start - 0.0005 { return }
            if seconds >= window.end - 0.0005 {
                videoDone = true
                if let continuous = pass.continuous {
                    // The next window's first picture, as the decoder gave it.
                    raw.pointee.pts = ownPTS
                    continuous.putBack(frame)
                }
                return
            }
        }
        windowFrames += 1
        if pass.isInitialization {
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

    func audioFrame(_ frame: Frame) throws {
        guard let converter, let audioEncoder, !audioDone else { return }
        try converter.push(frame.raw)
        while let chunk = try converter.pull(size: audioEncoder.frameSize, flushing: false) {
            try audioPackets(audioEncoder.encode(chunk.raw))
        }
        if let audio {
            // Past the window's end: the audio of this segment is complete.
            let ts = frame.raw.pointee.best_effort_timestamp
            let tb = audio.timeBase
            if ts != vf_nopts_value(),
               Double(ts) * Double(tb.num) / Double(max(tb.den, 1)) - file.info.startTime >= window.end + 0.1 {
                try finishAudio()
            }
        }
    }
}
