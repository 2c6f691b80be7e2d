internal import CFFmpeg
import Foundation
import Media

/// One video decoder that goes through an item once, for a batch that makes its segments one after another.
///
/// Made alone, segment *k* seeks to the keyframe before its start and decodes from there; the batch makes every
/// segment the same way, so that each is byte-identical to a segment made on demand. On a source whose keyframes
/// are far apart (x264's default of one every 250 frames, 8.3 s at 30 fps) that decodes most pictures several
/// times: the synthetic 10 s clip's ladder decoded 2.1× the pictures ffmpeg does. This decoder carries on from
/// segment to segment instead: the pictures it gives a window are those a decoder started at the window's keyframe
/// gives, as long as that keyframe is an IDR picture (nothing after it refers to anything before it) and the
/// frames' times rise (FFmpeg then times each frame by its own packet, whatever it decoded before). ``isExact``
/// says whether both held for every packet and frame so far; once it is false the batch goes back to seeking.
///
/// Reads on a second demuxer of the same source (``MediaFile/twin(discardingAllBut:)``), which reads only video
/// packets; the batch's own file keeps serving each segment's audio from its seek, as a segment alone reads it.
/// Used for H.264 in MP4/MOV only, whose packets all carry presentation times and whose keyframes are sync samples,
/// and for local files and bytes in memory (a remote item would be downloaded twice).
final class ContinuousVideo {
    /// The decoder, which each segment's pipeline uses in place of its own.
    let decoder: StreamDecoder
    private let twin: MediaFile
    private let packet: Packet
    /// Frames decoded past the last window's end, handed out first.
    private var stash: [Frame] = []
    private var inputEnded = false
    /// The NAL length prefix size of the stream's `avcC` (1, 2 or 4 bytes).
    private let lengthSize: Int
    private var lastPTS: Int64? = nil
    /// Whether every keyframe read so far is an IDR picture and every frame so far had a rising time of its own.
    private(set) var isExact = true

    /// A decoder over `file`'s video stream `index`, or nil where the continuous decode is not known to match a
    /// segment made alone (another codec or container, H.264 whose parameter sets are not an `avcC` record) or
    /// would cost more than it saves (an item read over the network, whose video bytes the second demuxer would
    /// fetch a second time).
    /// - Throws: ``MediaError`` from opening the source again or opening the decoder.
    static func make(file: MediaFile, stream index: Int, threads: Int) throws -> ContinuousVideo? {
        if case .url(_, let local) = file.source, !local { return nil }
        let par = file.stream(at: index).pointee.codecpar!
        guard par.pointee.codec_id == AV_CODEC_ID_H264,
              let name = file.context.pointee.iformat?.pointee.name, String(cString: name).hasPrefix("mov,"),
              let extradata = par.pointee.extradata, par.pointee.extradata_size >= 7, extradata[0] == 1 else {
            return nil
        }
        let lengthSize = Int(extradata[4] & 3) + 1
        guard lengthSize != 3 else { return nil }
        return try ContinuousVideo(file: file, stream: index, threads: threads, lengthSize: lengthSize)
    }

    private init(file: MediaFile, stream index: Int, threads: Int, lengthSize: Int) throws {
        twin = try file.twin(discardingAllBut: index)
        // The decoder counts its pictures against `file`'s limits, as a segment's own decoder does.
        decoder = try StreamDecoder(file: file, stream: index, threads: threads)
        guard let packet = Packet() else {
            throw MediaError(.limitExceeded, operation: "transcode", item: file.item, message: "out of memory")
        }
        self.packet = packet
        self.lengthSize = lengthSize
    }

    /// The next decoded frame in presentation order (those put back first), or nil when the stream ended.
    /// - Throws: ``MediaError`` from reading or decoding, as a segment's own decode throws.
    func next() throws -> Frame? {
        while true {
            if !stash.isEmpty { return stash.removeFirst() }
            switch try decoder.receive() {
            case .output(let frame):
                check(frame.raw)
                return frame
            case .ended:
                return nil
            case .needsInput:
                if inputEnded { return nil }
                try feed()
            }
        }
    }

    /// Gives `frame` back, to be the first that ``next()`` returns: it belongs to the next window.
    func putBack(_ frame: Frame) {
        stash.insert(frame, at: 0)
    }

    /// Sends the decoder the next video packet, or the end of the input.
    private func feed() throws {
        while true {
            if try twin.readPacket(into: packet.raw) == .endOfFile {
                _ = try decoder.send(nil)
                inputEnded = true
                return
            }
            defer { av_packet_unref(packet.raw) }
            guard Int(packet.raw.pointee.stream_index) == decoder.streamIndex else { continue }
            if packet.raw.pointee.flags & AV_PKT_FLAG_KEY != 0, !holdsIDR(packet.raw) { isExact = false }
            if packet.raw.pointee.pts == vf_nopts_value() { isExact = false }
            while try !decoder.send(packet.raw) {
                // The decoder has a frame to give first: kept for `next`, then the packet goes in.
                guard case .output(let frame) = try decoder.receive() else { break }
                check(frame.raw)
                stash.append(frame)
            }
            return
        }
    }

    /// A frame's time must be its own packet's, rising: then a decoder started anywhere before it times it alike.
    private func check(_ frame: UnsafeMutablePointer<AVFrame>) {
        let pts = frame.pointee.pts
        if pts == vf_nopts_value() || frame.pointee.best_effort_timestamp != pts || (lastPTS.map { pts <= $0 } ?? false) {
            isExact = false
        }
        lastPTS = pts
    }

    /// Whether a length-prefixed H.264 access unit holds an IDR slice (NAL unit type 5).
    private func holdsIDR(_ packet: UnsafeMutablePointer<AVPacket>) -> Bool {
        guard let data = packet.pointee.data else { return false }
        let size = Int(packet.pointee.size)
        var offset = 0
        while offset + lengthSize < size {
            var length = 0
            for i in 0..<lengthSize { length = length << 8 | Int(data[offset + i]) }
            offset += lengthSize
            guard length > 0, offset + length <= size else { return false }
            if data[offset] & 0x1f == 5 { return true }
            offset += length
        }
        return false
    }
}
