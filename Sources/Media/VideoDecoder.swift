internal import CFFmpeg
import Foundation

/// Which video stream of a file a ``VideoDecoder`` decodes.
public enum StreamSelection: Sendable, Equatable {
    /// The stream a player shows: ``MediaInfo/primaryVideoStream`` (a real video before a cover picture).
    case primary
    /// The first video stream in container order, as `ffmpeg -map 0:v:0` picks it.
    case firstVideo
    /// A stream by container index.
    case index(Int)
}

/// How a ``VideoDecoder`` decodes.
public struct DecoderOptions: Sendable, Equatable {
    /// Decoder threads, or ``automaticThreads`` (the default) to let FFmpeg choose as the ffmpeg CLI does (its
    /// `-threads auto`): with more than one core, cores + 1 (at most 16), else 1. The extra thread keeps the cores busy
    /// while one frame thread waits; ``VideoDecoder/threadCount`` tells what FFmpeg chose.
    public var threadCount: Int = DecoderOptions.automaticThreads
    /// Decode only keyframes: non-key packets are skipped before the decoder and the decoder discards non-key
    /// frames (`skip_frame = AVDISCARD_NONKEY`). Much faster for thumbnails and scrubbing.
    public var keyframesOnly: Bool = false
    /// Which stream to decode.
    public var stream: StreamSelection = .primary

    /// ``threadCount`` for FFmpeg's own choice (`AVCodecContext.thread_count` 0).
    public static let automaticThreads = 0

    /// Options with the defaults described on each property.
    public init(threadCount: Int = DecoderOptions.automaticThreads, keyframesOnly: Bool = false,
                stream: StreamSelection = .primary) {
        self.threadCount = threadCount
        self.keyframesOnly = keyframesOnly
        self.stream = stream
    }
}

/// How ``VideoDecoder/seek(to:mode:)`` lands.
public enum SeekMode: Sendable, Equatable {
    /// The keyframe at or before the target: one seek, one decoded frame. What a scrubber shows.
    case fast
    /// The first frame at or after the target: seek to the keyframe before it, then decode forward.
    case exact
}

/// The outcome of one ``VideoDecoder/receive()`` step. Expected outcomes are values, not errors.
public enum DecodeResult {
    /// A decoded frame.
    case frame(VideoFrame)
    /// The decoder needs another packet (FFmpeg's `AVERROR(EAGAIN)`).
    case needsInput
    /// The stream has ended and the decoder is drained (FFmpeg's `AVERROR_EOF`).
    case endOfStream
}

/// Decodes one video stream of a ``MediaFile`` frame by frame, in presentation order.
///
/// Keeps its file alive. Not thread-safe: one thread at a time. The corresponding FFmpeg functions are
/// `avcodec_send_packet` and `avcodec_receive_frame`.
public final class VideoDecoder {
    /// The file this decoder reads.
    public let file: MediaFile
    /// The stream being decoded.
    public let stream: StreamInfo
    /// The options given at creation.
    public let options: DecoderOptions
    /// The threads FFmpeg decodes with (`AVCodecContext.thread_count` after `avcodec_open2`): the count asked for, or
    /// what FFmpeg chose for ``DecoderOptions/automaticThreads``; 1 when the codec decodes on the calling thread only.
    public var threadCount: Int { core.threadCount }
    /// Packets the decoder rejected as corrupt so far. Like the ffmpeg CLI, decoding goes on after such a packet.
    public var corruptPacketCount: Int { core.corruptPacketCount }

    /// The stream's display matrix as an orientation, nil when the stream has none: then each frame's own matrix
    /// (a JPEG's EXIF Orientation) decides ``VideoFrame/orientation``.
    let streamOrientation: Orientation?
    /// The stream's field order from the container or the codec parameters (`AV_FIELD_TT` … for interlaced).
    let fieldOrder: AVFieldOrder
    /// The codec and its rules (``StreamDecoder``, the transcoder's too); this class reads the stream's packets.
    private let core: StreamDecoder
    private let packet: UnsafeMutablePointer<AVPacket>
    private let timeBase: AVRational
    private var inputEnded = false
    private var drained = false
    private var exactTarget: Double? = nil
    private var sequence = 0
    /// The read error that ended the input after frames were decoded.
    private var readError: MediaError? = nil
    private var scratch: UnsafeMutablePointer<AVFrame>? = nil
    /// `packet` holds a packet the decoder refused with `EAGAIN` (it had output to give first); the next ``feed()``
    /// sends it again before reading another.
    private var heldPacket = false

    /// Opens a decoder for a video stream of `file`.
    /// - Throws: ``MediaError`` `noVideoStream`, `unsupportedCodec`, `limitExceeded`.
    public init(file: MediaFile, options: DecoderOptions = DecoderOptions()) throws {
        self.file = file
        self.options = options
        let chosen: StreamInfo? = switch options.stream {
        case .primary: file.info.primaryVideoStream
        case .firstVideo: file.info.firstVideoStream
        case .index(let i): file.info.streams.first { $0.index == i && $0.kind == .video }
        }
        guard let chosen else {
            throw MediaError(.noVideoStream, operation: "open decoder", item: file.item,
                             message: "no video stream or cover picture in \(file.info.container)")
        }
        self.stream = chosen
        let avStream = file.stream(at: chosen.index)
        self.timeBase = avStream.pointee.time_base
        self.streamOrientation = vf_stream_display_matrix(avStream) != nil ? chosen.orientation : nil
        self.fieldOrder = avStream.pointee.codecpar.pointee.field_order

        // More threads than 64 never decode faster, and each costs a thread and its frame buffers. 0 is FFmpeg's
        // automatic count (av_cpu_count() + 1, at most 16), which the ffmpeg CLI asks for (`-threads auto`).
        let threads = options.threadCount == DecoderOptions.automaticThreads ? 0 : min(max(1, options.threadCount), 64)
        self.core = try StreamDecoder(file: file, stream: chosen.index, threads: threads,
                                      keyframesOnly: options.keyframesOnly)
        guard let pkt = av_packet_alloc() else {
            throw MediaError.ffmpeg(vf_averror(ENOMEM), operation: "open decoder", item: file.item)
        }
        self.packet = pkt
    }

    deinit {
        var pkt: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&pkt)
        av_frame_free(&scratch)
    }

    /// Takes one frame out of the decoder if it has one. The low-level step under ``nextFrame()``: on
    /// ``DecodeResult/needsInput`` call ``feed()``.
    public func receive() throws -> DecodeResult {
        if drained { return .endOfStream }
        // One scratch frame receives; it is handed over only when it holds a picture, so asking a decoder that
        // needs more input (once per packet) allocates nothing.
        if scratch == nil { scratch = av_frame_alloc() }
        guard let raw = scratch else {
            throw MediaError(.limitExceeded, operation: "decode", item: file.item, message: "out of memory")
        }
        switch try core.receive(into: raw) {
        case .output:
            scratch = nil
            // The container's sample aspect ratio, when valid, overrides the bitstream's on every decoded frame, as
            // the ffmpeg CLI sets it (and `av_guess_sample_aspect_ratio` chooses); see ``StreamInfo/sampleAspectRatio``.
            let container = file.stream(at: stream.index).pointee.sample_aspect_ratio
            if container.num > 0 && container.den > 0 { raw.pointee.sample_aspect_ratio = container }
            let frame = VideoFrame(takingOwnership: raw, timeBase: timeBase, startTime: file.info.startTime,
                                   sequenceNumber: sequence, streamOrientation: streamOrientation)
            sequence += 1
            return .frame(frame)
        case .needsInput:
            return .needsInput
        case .ended:
            drained = true
            return .endOfStream
        }
    }

    /// Reads packets until one of this stream is sent to the decoder, or the input ends (then the decoder is told
    /// to flush). Checks cancellation between packets.
    public func feed() throws {
        if inputEnded { return }
        if heldPacket {
            heldPacket = false
            if try send() {
                if heldPacket {
                    // receive() just said it needs input and the decoder still refuses it: it is stuck.
                    av_packet_unref(packet)
                    heldPacket = false
                    throw MediaError(.invalidData, operation: "decode", item: file.item,
                                     message: "the decoder neither takes input nor gives output")
                }
                return
            }
        }
        while true {
            try file.throwIfCancelled("decode")
            let read: PacketRead
            do {
                read = try file.readPacket(into: packet)
            } catch let error as MediaError where sequence > 0 && error.kind == .io {
                // Like the ffmpeg CLI: a read error after frames were decoded ends the input.
                readError = error
                read = .endOfFile
            }
            switch read {
            case .endOfFile:
                inputEnded = true
                _ = try? core.submit(nil)
                return
            case .packet:
                guard Int(packet.pointee.stream_index) == stream.index,
                      !options.keyframesOnly || (packet.pointee.flags & vf_pkt_flag_key()) != 0 else {
                    av_packet_unref(packet)
                    continue
                }
                if try send() { return }
            }
        }
    }

    /// Sends `packet` to the decoder (``StreamDecoder/submit(_:)``). Returns true when the caller should go back to
    /// ``receive()``: the packet was taken, or refused as corrupt (FFmpeg may still have taken it in and hold output
    /// from it), or refused with `EAGAIN` (kept in `packet` for the next ``feed()``: after an error a decoder can
    /// hold output and refuse input, found by fuzzing).
    private func send() throws -> Bool {
        let sent: StreamDecoder.Sent
        do {
            sent = try core.submit(packet)
        } catch {
            av_packet_unref(packet)
            throw error
        }
        if sent == .busy {
            heldPacket = true
            return true
        }
        av_packet_unref(packet)
        return true
    }

    /// The next frame in presentation order, or nil at the end of the stream.
    ///
    /// After an exact ``seek(to:mode:)`` frames before the target are decoded and dropped here.
    /// - Throws: ``MediaError`` `cancelled`, `timedOut`, `io`, and `invalidData` when the stream ended without a single
    ///   decodable frame.
    public func nextFrame() throws -> VideoFrame? {
        while true {
            switch try receive() {
            case .frame(let frame):
                if let target = exactTarget {
                    if let t = frame.time, t + halfTick < target { continue }
                    exactTarget = nil
                }
                return frame
            case .needsInput:
                try feed()
            case .endOfStream:
                if sequence == 0, let lastError = readError ?? core.lastCorruption {
                    throw MediaError(.invalidData, operation: "decode", item: file.item,
                                     message: "no frame could be decoded: \(lastError.message)", code: lastError.code)
                }
                return nil
            }
        }
    }

    /// Moves to `seconds` (from the start of the container). After `.fast` the next frame is the keyframe at or
    /// before the target; after `.exact`, the first frame at or after it. The corresponding FFmpeg functions are
    /// `av_seek_frame` (backward) and `avcodec_flush_buffers`.
    public func seek(to seconds: Double, mode: SeekMode) throws {
        // 1e9 s is past any media; beyond it the timestamp conversions below would overflow.
        guard seconds.isFinite, seconds >= 0, seconds <= 1e9 else {
            throw MediaError(.invalidArgument, operation: "seek", item: file.item,
                             message: "target \(seconds) s is not a time from 0 to 1e9 s")
        }
        try file.throwIfCancelled("seek")
        FFmpegLog.clear()
        try file.seekBackward(to: seconds, stream: stream.index)
        core.flush()
        // "No frame could be decoded" speaks of what is decoded from here on.
        readError = nil
        core.forgetCorruption()
        if heldPacket {
            av_packet_unref(packet)
            heldPacket = false
        }
        inputEnded = false
        drained = false
        sequence = 0
        exactTarget = mode == .exact ? seconds : nil
    }

    /// The keyframe at or before `seconds`, decoded alone: seeks back to it, sends that one packet and drains the
    /// decoder, so exactly one picture is decoded whatever the stream's reordering delay (an H.264 stream with
    /// B-frames otherwise decodes two or three frames before the first comes out). What a thumbnail or a scrubber
    /// preview needs. Packets the decoder rejects as corrupt are skipped for the next keyframe.
    ///
    /// Afterwards the decoder is drained: ``nextFrame()`` returns nil until the next ``seek(to:mode:)`` or
    /// `keyframe(at:)`.
    /// - Returns: the frame, or nil when no keyframe at or after the seek point could be decoded.
    /// - Throws: ``MediaError`` `invalidArgument`, `cancelled`, `timedOut`, `io`, and seek failures.
    public func keyframe(at seconds: Double) throws -> VideoFrame? {
        try seek(to: seconds, mode: .fast)
        while true {
            try file.throwIfCancelled("decode")
            guard try file.readPacket(into: packet) == .packet else {
                // Drained, so that ``nextFrame()`` now ends instead of asking for input there is none of.
                inputEnded = true
                _ = try? core.submit(nil)
                return nil
            }
            defer { av_packet_unref(packet) }
            guard Int(packet.pointee.stream_index) == stream.index,
                  (packet.pointee.flags & vf_pkt_flag_key()) != 0 else { continue }
            switch try core.submit(packet) {
            case .corrupt:
                // Start clean from the next keyframe: the decoder may hold state (or output) from the bad one.
                core.flush()
                continue
            case .busy:
                // Just flushed by the seek, a decoder cannot have output to give first.
                throw MediaError(.invalidData, operation: "decode", item: file.item,
                                 message: "the decoder neither takes input nor gives output")
            case .taken:
                break
            }
            inputEnded = true
            _ = try? core.submit(nil)
            if case .frame(let frame) = try receive() { return frame }
            // The decoder produced nothing from this keyframe: start over from the next one.
            core.flush()
            inputEnded = false
            drained = false
        }
    }

    /// Half a tick of the stream's time base: a frame whose timestamp rounds to the target counts as "at" it.
    private var halfTick: Double { Double(timeBase.num) / Double(max(timeBase.den, 1)) / 2 }
}
