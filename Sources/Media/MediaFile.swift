internal import CFFmpeg
import Foundation

/// An opened container: a local file or an http(s) URL, with its ``MediaInfo``.
///
/// Owns FFmpeg's demuxer state (`AVFormatContext`) and frees it on deinit. Not thread-safe: use one `MediaFile` from
/// one thread at a time (it may move between threads); ``CancellationToken/cancel()`` is the one call that is safe
/// from anywhere while another thread works on the file.
public final class MediaFile {
    /// The item as given, with any URL credentials removed; used in errors.
    public let item: String
    /// Container and stream information. The corresponding FFmpeg functions are `avformat_open_input` and
    /// `avformat_find_stream_info`.
    public let info: MediaInfo
    /// The options the file was opened with.
    public let options: OpenOptions

    let context: UnsafeMutablePointer<AVFormatContext>
    let interrupt: InterruptState
    private let interruptBox: Unmanaged<InterruptState>
    /// Packets read while the stream information was completed (``StreamInfoMode/header``), handed out first by
    /// `readPacket`; dropped by a seek.
    private var pending: [UnsafeMutablePointer<AVPacket>] = []

    /// Opens a local path, a `file:` URL or an `http(s)://` URL and reads its stream information.
    ///
    /// - Parameters:
    ///   - path: a filesystem path, or a URL string with a scheme.
    ///   - options: protocol whitelist, time limits and size limits.
    ///   - cancellation: cancels a blocking open or any later read on this file.
    /// - Throws: ``MediaError`` — `fileNotFound`, `protocolNotAllowed`, `unsupportedFormat`, `invalidData`, `io`,
    ///   `timedOut`, `cancelled`, `limitExceeded`.
    public init(path: String, options: OpenOptions = OpenOptions(), cancellation: CancellationToken? = nil) throws {
        _ = FFmpegLog.install
        FFmpegLog.clear()
        let target = try MediaURL(path, whitelist: options.protocolWhitelist)
        try target.checkLocalFile()
        self.item = target.display
        self.options = options
        self.interrupt = InterruptState(token: cancellation)
        self.interruptBox = Unmanaged.passRetained(interrupt)

        if interrupt.isCancelled {
            interruptBox.release()
            throw MediaError(.cancelled, operation: "open", item: target.display, message: "cancelled before start")
        }

        guard var ctx = avformat_alloc_context() else {
            interruptBox.release()
            throw MediaError(.limitExceeded, operation: "open", item: target.display, message: "out of memory")
        }
        vf_set_interrupt_callback(ctx, mediaInterruptCallback, interruptBox.toOpaque())

        var dict: OpaquePointer? = nil
        av_dict_set(&dict, "protocol_whitelist", options.protocolWhitelist.joined(separator: ","), 0)
        defer { av_dict_free(&dict) }

        interrupt.arm(seconds: options.openTimeout)
        var maybeCtx: UnsafeMutablePointer<AVFormatContext>? = ctx
        let openResult = avformat_open_input(&maybeCtx, target.ffmpegURL, nil, &dict)
        guard openResult >= 0, let opened = maybeCtx else {
            // avformat_open_input frees the context on failure.
            let error = MediaError.ffmpeg(openResult, operation: "open", item: target.display, interrupt: interrupt)
            interruptBox.release()
            throw error
        }
        ctx = opened

        var read: [UnsafeMutablePointer<AVPacket>]? = nil
        if options.streamInfo == .header { read = MediaFile.completeFromHeader(ctx) }
        let infoResult = read == nil ? avformat_find_stream_info(ctx, nil) : 0
        interrupt.disarm()
        if infoResult < 0 {
            let error = MediaError.ffmpeg(infoResult, operation: "read stream info", item: target.display,
                                          interrupt: interrupt)
            avformat_close_input(&maybeCtx)
            interruptBox.release()
            throw error
        }
        let info = MediaFile.readInfo(ctx)
        if let tooLarge = MediaFile.limitViolation(info, options) {
            // Before every stored property is set deinit will not run, so release here.
            for packet in read ?? [] {
                var p: UnsafeMutablePointer<AVPacket>? = packet
                av_packet_free(&p)
            }
            avformat_close_input(&maybeCtx)
            interruptBox.release()
            throw MediaError(.limitExceeded, operation: "open", item: target.display, message: tooLarge)
        }
        self.context = ctx
        self.info = info
        self.pending = read ?? []
    }

    deinit {
        dropPendingPackets()
        var ctx: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&ctx)
        interruptBox.release()
    }

    /// Whether the caller's token has been cancelled.
    var isCancelled: Bool { interrupt.isCancelled }

    func throwIfCancelled(_ operation: String) throws {
        if interrupt.isCancelled {
            throw MediaError(.cancelled, operation: operation, item: item, message: "cancelled by the caller")
        }
    }

    func stream(at index: Int) -> UnsafeMutablePointer<AVStream> {
        precondition(index >= 0 && index < Int(context.pointee.nb_streams), "stream index out of range")
        return context.pointee.streams[index]!
    }

    private static func limitViolation(_ info: MediaInfo, _ options: OpenOptions) -> String? {
        for s in info.streams where s.kind == .video {
            if s.width > options.maxDimension || s.height > options.maxDimension {
                return "stream \(s.index) is \(s.width)x\(s.height), over the limit of \(options.maxDimension) per side"
            }
            if s.width * s.height > options.maxPixelCount {
                return "stream \(s.index) has \(s.width * s.height) pixels, over the limit of \(options.maxPixelCount)"
            }
        }
        return nil
    }
}

/// FFmpeg's interrupt callback: `opaque` is an unretained `InterruptState` kept alive by its `MediaFile`.
private let mediaInterruptCallback: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { opaque in
    guard let opaque else { return 0 }
    return Unmanaged<InterruptState>.fromOpaque(opaque).takeUnretainedValue().shouldInterrupt() ? 1 : 0
}

// MARK: - Reading

/// One demuxed packet step.
enum PacketRead {
    case packet
    case endOfFile
}

extension MediaFile {
    /// Reads the next packet of any stream into `packet` (which the caller unrefs). The corresponding FFmpeg
    /// function is `av_read_frame`; its `AVERROR_EOF` is ``PacketRead/endOfFile``, not an error.
    func readPacket(into packet: UnsafeMutablePointer<AVPacket>) throws -> PacketRead {
        try throwIfCancelled("read")
        if !pending.isEmpty {
            var first: UnsafeMutablePointer<AVPacket>? = pending.removeFirst()
            av_packet_move_ref(packet, first)
            av_packet_free(&first)
            return .packet
        }
        interrupt.arm(seconds: options.readTimeout)
        let result = av_read_frame(context, packet)
        interrupt.disarm()
        if result == vf_averror_eof() { return .endOfFile }
        if result < 0 {
            // Like the ffmpeg CLI, corrupt data past the last readable packet ends the input rather than failing it
            // (e.g. an mdat box that claims more bytes than the file has); what was decoded so far stands.
            if result == vf_averror_invaliddata() { return .endOfFile }
            throw MediaError.ffmpeg(result, operation: "read", item: item, interrupt: interrupt)
        }
        return .packet
    }

    /// Frees the packets kept from opening; called before a seek, after which they are stale.
    func dropPendingPackets() {
        for packet in pending {
            var p: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&p)
        }
        pending.removeAll()
    }
}
