package import CFFmpeg
import Foundation

/// The one decoder over packets: a codec context for one audio or video stream of a ``MediaFile``, handed packets by
/// its caller. The transcoder reads each packet once and gives it to the decoder of its stream; ``VideoDecoder``
/// reads its stream's packets and decodes them through one. The rules are here once: corrupt packets are counted and
/// skipped as the ffmpeg CLI skips them, a stream growing past the file's size limits midway is that limit (not a
/// corrupt packet), every decoded picture counts against the file's limits, and the frame-size limits are enforced
/// by the codec (`max_pixels`).
package final class StreamDecoder {
    package let file: MediaFile
    package let streamIndex: Int
    package let timeBase: AVRational
    package let isVideo: Bool
    private(set) var corruptPacketCount = 0
    package private(set) var framesDecoded = 0
    private var lastError: MediaError? = nil
    private let context: UnsafeMutablePointer<AVCodecContext>

    /// - Parameters:
    ///   - threads: decoding threads, at most 64; 0 is FFmpeg's automatic count (`av_cpu_count() + 1`, at most 16),
    ///     which the ffmpeg CLI asks for.
    ///   - keyframesOnly: decode keyframes only (`skip_frame = AVDISCARD_NONKEY`).
    /// - Throws: ``MediaError`` `unsupportedCodec`, `limitExceeded`, and FFmpeg's errors opening the codec.
    package init(file: MediaFile, stream index: Int, threads: Int, keyframesOnly: Bool = false) throws {
        self.file = file
        self.streamIndex = index
        let stream = file.stream(at: index)
        let par = stream.pointee.codecpar!
        self.timeBase = stream.pointee.time_base
        self.isVideo = par.pointee.codec_type == AVMEDIA_TYPE_VIDEO
        guard let codec = avcodec_find_decoder(par.pointee.codec_id) else {
            let name = avcodec_get_name(par.pointee.codec_id).map { String(cString: $0) } ?? "?"
            throw MediaError(.unsupportedCodec, operation: "open decoder", item: file.item,
                             message: "no decoder for codec '\(name)' (stream \(index))")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw MediaError(.limitExceeded, operation: "open decoder", item: file.item, message: "out of memory")
        }
        var owned: UnsafeMutablePointer<AVCodecContext>? = ctx
        var result = avcodec_parameters_to_context(ctx, par)
        if result >= 0 {
            ctx.pointee.pkt_timebase = stream.pointee.time_base
            ctx.pointee.thread_count = Int32(min(max(0, threads), 64))
            if isVideo {
                ctx.pointee.thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE
                if keyframesOnly { ctx.pointee.skip_frame = AVDISCARD_NONKEY }
                // The decoder refuses to allocate a picture larger than the limit, whatever the bitstream claims.
                ctx.pointee.max_pixels = Int64(min(file.options.maxPixelCount, Int(Int64.max)))
            }
            result = avcodec_open2(ctx, codec, nil)
        }
        guard result >= 0 else {
            avcodec_free_context(&owned)
            throw MediaError.ffmpeg(result, operation: "open decoder", item: file.item)
        }
        context = ctx
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&ctx)
    }

    /// What became of a packet sent: taken, refused as corrupt (counted and skipped; the decoder may still hold
    /// output from what it took before), or refused because the decoder has output to give first (`EAGAIN`).
    package enum Sent {
        case taken, corrupt, busy
    }

    /// Sends a packet (nil: the input ended, drain). Returns false when the decoder has output to give first
    /// (`EAGAIN`): receive, then send the same packet again.
    package func send(_ packet: UnsafeMutablePointer<AVPacket>?) throws -> Bool {
        try submit(packet) != .busy
    }

    /// Sends a packet (nil: the input ended, drain) and says what became of it.
    /// - Throws: ``MediaError`` `limitExceeded` when the stream grows past the file's size limits, FFmpeg's other
    ///   errors of a video decoder.
    package func submit(_ packet: UnsafeMutablePointer<AVPacket>?) throws -> Sent {
        let sent = avcodec_send_packet(context, packet)
        if sent >= 0 || sent == vf_averror_eof() { return .taken }
        if sent == vf_averror_eagain() { return .busy }
        if isVideo {
            // The decoder refuses to allocate a picture past `max_pixels` and reports it as invalid data or an
            // invalid argument: that is the limit, not a corrupt packet to skip silently.
            let width = Int(context.pointee.width), height = Int(context.pointee.height)
            if width > file.options.maxDimension || height > file.options.maxDimension
                || width * height > file.options.maxPixelCount {
                throw MediaError(.limitExceeded, operation: "decode", item: file.item, message: """
                    the stream grows to \(width)x\(height) midway, over the limit of \(file.options.maxDimension) \
                    per side and \(file.options.maxPixelCount) pixels; no later frame is decoded
                    """)
            }
        }
        if sent == vf_averror_invaliddata() || sent == vf_averror_patchwelcome() || !isVideo {
            // Like the ffmpeg CLI: a corrupt packet is skipped (an audio decoder's any error too). FFmpeg reports
            // decoding errors of packets it already took in, so the decoder may have output waiting: receive first.
            corruptPacketCount += 1
            lastError = MediaError.ffmpeg(sent, operation: "decode", item: file.item)
            return .corrupt
        }
        throw MediaError.ffmpeg(sent, operation: "decode", item: file.item, interrupt: file.interrupt)
    }

    /// The next decoded frame, if the decoder has one.
    package func receive() throws -> Pull<Frame> {
        guard let frame = Frame() else {
            throw MediaError(.limitExceeded, operation: "decode", item: file.item, message: "out of memory")
        }
        switch try receive(into: frame.raw) {
        case .output: return .output(frame)
        case .needsInput: return .needsInput
        case .ended: return .ended
        }
    }

    /// Receives the next decoded frame into `raw` (counted against the file's limits), if the decoder has one: a
    /// caller that asks once per packet can keep one frame for the answers that hold nothing.
    package func receive(into raw: UnsafeMutablePointer<AVFrame>) throws -> Pull<Void> {
        let result = avcodec_receive_frame(context, raw)
        if result >= 0 {
            framesDecoded += 1
            if isVideo {
                let bytes = av_image_get_buffer_size(AVPixelFormat(rawValue: raw.pointee.format), raw.pointee.width,
                                                     raw.pointee.height, 1)
                try file.accountDecoded(width: Int(raw.pointee.width), height: Int(raw.pointee.height),
                                        bytes: Int(max(bytes, 0)))
            }
            return .output(())
        }
        if result == vf_averror_eagain() { return .needsInput }
        if result == vf_averror_eof() { return .ended }
        if !isVideo {
            corruptPacketCount += 1
            return .needsInput
        }
        throw MediaError.ffmpeg(result, operation: "decode", item: file.item, interrupt: file.interrupt)
    }

    /// The threads FFmpeg decodes with after opening: 1 when the codec decodes on the calling thread only.
    package var threadCount: Int { context.pointee.active_thread_type == 0 ? 1 : Int(context.pointee.thread_count) }

    /// The error of the last corrupt packet skipped, if any.
    package var lastCorruption: MediaError? { lastError }

    /// Forgets ``lastCorruption`` (a seek starts a new run of decoding).
    package func forgetCorruption() { lastError = nil }

    /// Whether the packets sent from now on may go undecoded when no other picture refers to theirs
    /// (`skip_frame = AVDISCARD_NONREF`: H.264's `nal_ref_idc` 0, MPEG-2's B-pictures; decoders without such
    /// pictures decode everything). The pictures that are decoded come out the same: nothing refers to the skipped
    /// ones. Taken per packet, with frame threads too (each packet's submission copies the setting).
    package var skipsNonReference = false {
        didSet {
            guard skipsNonReference != oldValue else { return }
            context.pointee.skip_frame = skipsNonReference ? AVDISCARD_NONREF : AVDISCARD_DEFAULT
        }
    }

    /// The stream's codec.
    package var codecID: AVCodecID { context.pointee.codec_id }

    /// Forgets buffered input after a seek.
    package func flush() { avcodec_flush_buffers(context) }

    /// Why nothing could be decoded, when the stream ended without a frame.
    package var failureWithoutFrames: MediaError? {
        guard framesDecoded == 0 else { return nil }
        return MediaError(.invalidData, operation: "decode", item: file.item,
                          message: "no frame could be decoded" + (lastError.map { ": \($0.message)" } ?? ""),
                          code: lastError?.code)
    }
}
