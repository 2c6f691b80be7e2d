package import CFFmpeg
import EngineSupport
import Foundation

/// An opened container: a local file or an http(s) URL, with its ``MediaInfo``.
///
/// Owns FFmpeg's demuxer state (`AVFormatContext`) and frees it on deinit. Not thread-safe: use one `MediaFile` from
/// one thread at a time (it may move between threads); ``CancellationToken/cancel()`` is the one call that is safe
/// from anywhere while another thread works on the file.
public final class MediaFile {
    /// The item as given, redacted (``Redaction/redacted(_:)``: no URL user info or secret query values); used in errors.
    public let item: String
    /// Container and stream information. The corresponding FFmpeg functions are `avformat_open_input` and
    /// `avformat_find_stream_info`.
    public let info: MediaInfo
    /// The options the file was opened with.
    public let options: OpenOptions

    let interrupt: InterruptState
    /// The format context, the I/O it reads through and the interrupt retain, freed together.
    private let demuxer: DemuxerContext
    /// Packets read while the stream information was completed (``StreamInfoMode/header``), handed out first by
    /// `readPacket`; dropped by a seek.
    private var pending: [Packet] = []
    /// Frames and picture bytes decoded from this file so far, by all of its decoders; checked against
    /// ``OpenOptions/maxDecodedFrames`` and ``OpenOptions/maxDecodedBytes``.
    private(set) var decodedFrames = 0
    private(set) var decodedBytes = 0

    /// Opens a local path, a `file:` URL or an `http(s)://` URL and reads its stream information.
    ///
    /// The open policy applies first: the protocol must be in ``OpenOptions/protocolWhitelist``; the detected
    /// format must not be a playlist (unless ``OpenOptions/allowsPlaylists``) nor one of ``refusedFormats``; an
    /// item that is not a local file may not make FFmpeg open `file:` URLs (nested opens, redirects).
    ///
    /// - Parameters:
    ///   - path: a filesystem path, or a URL string with a scheme.
    ///   - options: protocol whitelist, playlist policy, time limits and size limits.
    ///   - cancellation: cancels a blocking open or any later read on this file.
    /// - Throws: ``MediaError`` — `fileNotFound`, `protocolNotAllowed`, `policyViolation`, `unsupportedFormat`,
    ///   `invalidData`, `io`, `timedOut`, `cancelled`, `limitExceeded`.
    public convenience init(path: String, options: OpenOptions = OpenOptions(),
                            cancellation: CancellationToken? = nil) throws {
        _ = FFmpegLog.install
        FFmpegLog.clear()
        let target = try MediaURL(path, whitelist: options.protocolWhitelist)
        try target.checkLocalFile()
        try self.init(source: .url(target.ffmpegURL, local: target.ffmpegURL.hasPrefix("file:")),
                      item: target.display, options: options, cancellation: cancellation)
    }

    /// Opens media held in memory, as if read from a file named `name` (the name only helps format detection and
    /// appears in errors). No protocol is ever opened: playlists and image sequences cannot reach anything else.
    /// The corresponding FFmpeg function is `avio_alloc_context`, with read and seek callbacks over the bytes.
    ///
    /// - Throws: ``MediaError`` as ``init(path:options:cancellation:)`` does.
    public convenience init(data: Data, name: String, options: OpenOptions = OpenOptions(),
                            cancellation: CancellationToken? = nil) throws {
        _ = FFmpegLog.install
        FFmpegLog.clear()
        guard !data.isEmpty else {
            throw MediaError(.invalidData, operation: "open", item: name, message: "the data is empty")
        }
        try self.init(source: .memory(data), item: name, options: options, cancellation: cancellation)
    }

    package enum Source {
        case url(String, local: Bool)
        case memory(Data)
    }

    /// Where the file was opened from, to open it again (``videoEnd(stream:)`` reads on a second demuxer).
    package let source: Source

    init(source: Source, item: String, options: OpenOptions, cancellation: CancellationToken?) throws {
        self.item = Redaction.redacted(item)
        self.options = options
        self.source = source
        self.interrupt = InterruptState(token: cancellation, itemTimeLimit: options.itemTimeLimit)

        if interrupt.isCancelled {
            throw MediaError(.cancelled, operation: "open", item: item, message: "cancelled before start")
        }

        // From here every error path is just a throw: the demuxer's deinit frees what was made so far.
        guard let demuxer = DemuxerContext(interrupt: interrupt) else {
            throw MediaError(.limitExceeded, operation: "open", item: item, message: "out of memory")
        }
        interrupt.arm(seconds: options.openTimeout, for: .open)

        // Our own I/O context, so the format can be checked before its demuxer runs (a playlist demuxer opens the
        // URLs it lists while reading its header).
        var url: String
        var local: Bool?
        let opened: (input: MediaInput?, code: Int32)
        switch source {
        case .url(let text, let isLocal):
            url = text
            local = isLocal
            var callback = demuxer.interruptCallback
            opened = MediaInput.open(url: text, whitelist: MediaFile.effectiveWhitelist(options, local: isLocal),
                                     interrupt: &callback)
        case .memory(let data):
            url = item
            local = nil
            opened = (MediaInput.memory(data), vf_averror(ENOMEM))
        }
        guard var input = opened.input else {
            throw MediaError.ffmpeg(opened.code, operation: "open", item: item, interrupt: interrupt)
        }
        demuxer.attach(input)

        // A HEIC or AVIF photo: libheif decodes it, and what FFmpeg opens is the upright picture, in memory.
        var photo: PhotoInfo? = nil
        if let io = input.io,
           let decoded = try MediaFile.decodePhotoIfHEIF(io, item: item, options: options, interrupt: interrupt) {
            guard let picture = MediaInput.memory(decoded.pam) else {
                throw MediaError(.limitExceeded, operation: "open", item: item, message: "out of memory")
            }
            demuxer.attach(picture)
            input = picture
            (url, local, photo) = (item, nil, decoded.info)
        }

        var format: UnsafePointer<AVInputFormat>? = nil
        let probed = photo == nil ? av_probe_input_buffer2(input.io, &format, url, nil, 0, 0) : 0
        if photo != nil { format = av_find_input_format("pam_pipe") }
        let formatName = format.map { String(cString: $0.pointee.name) }
        if probed < 0 || formatName == nil {
            let code = input.ioError ?? (probed < 0 ? probed : vf_averror_invaliddata())
            throw MediaError.ffmpeg(code, operation: "open", item: item, interrupt: interrupt)
        } else if photo == nil, let name = formatName, let why = MediaFile.formatRefusal(name, options: options) {
            throw MediaError(.policyViolation, operation: "open", item: item, message: why)
        } else if let name = formatName, name.hasPrefix("mov,"), let io = input.io,
                  let claim = SampleTableScan.claimedSamples(io: io, wholeFile: local != false) {
            if claim.compressed {
                throw MediaError(.policyViolation, operation: "open", item: item, message: """
                    a compressed movie header (cmov, from QuickTime 3) is never opened: its sample tables cannot be \
                    checked before the demuxer reads them
                    """)
            } else if claim.samples > claim.fileSize {
                throw MediaError(.limitExceeded, operation: "open", item: item, message: """
                    the sample tables claim \(claim.samples) samples in a file of \(claim.fileSize) bytes; opening it \
                    would index every one of them (\(claim.samples / 43_690) MiB)
                    """)
            }
        }

        var dict: OpaquePointer? = nil
        av_dict_set(&dict, "protocol_whitelist", MediaFile.effectiveWhitelist(options, local: local), 0)
        av_dict_set(&dict, "format_whitelist", photo == nil ? MediaFile.formatWhitelist(options) : "pam_pipe", 0)
        if let maxStreams = options.maxStreams { av_dict_set(&dict, "max_streams", String(maxStreams), 0) }
        // As ffmpeg and ffprobe open every input: an MPEG-TS demuxer reads all programs' PMTs, not only the first,
        // which changes what the stream probe sees (a cut broadcast TS's average frame rate is 145/6 without it,
        // 25/1 with it). Other demuxers leave the option unused.
        av_dict_set(&dict, "scan_all_pmts", "1", 0)
        defer { av_dict_free(&dict) }
        if formatName == "image2" {
            if local == nil {
                // Memory has no file name to open: read the one picture from the bytes.
                format = av_find_input_format("image2pipe") ?? format
            } else {
                // One picture, the one named: no "%03d" sequence, no glob over a folder.
                av_dict_set(&dict, "pattern_type", "none", 0)
            }
        }

        let openResult = demuxer.open(url: url, format: format, options: &dict)
        guard openResult >= 0 else {
            throw MediaError.ffmpeg(input.ioError ?? openResult, operation: "open", item: item, interrupt: interrupt)
        }
        let ctx = demuxer.raw

        var read: [Packet]? = nil
        if options.streamInfo == .header { read = MediaFile.completeFromHeader(ctx) }
        let infoResult = read == nil ? avformat_find_stream_info(ctx, nil) : 0
        interrupt.disarm()
        if infoResult < 0 {
            throw MediaError.ffmpeg(input.ioError ?? infoResult, operation: "read stream info", item: item,
                                    interrupt: interrupt)
        }
        // An interrupt can end FFmpeg's probe early and still report success: the streams are then half known (a
        // cancelled serve job planned an interlaced TS with one rendition instead of three). Such a file is never used.
        if interrupt.isCancelled {
            throw MediaError(.cancelled, operation: "read stream info", item: item, message: "cancelled by the caller")
        }
        if interrupt.itemExpired {
            throw MediaError(.timedOut, operation: "read stream info", item: item,
                             message: "the item's time limit of \(options.itemTimeLimit ?? 0) s passed")
        }
        var info = MediaFile.readInfo(ctx)
        info.photo = photo
        if let bomb = MediaFile.indexViolation(ctx) {
            throw MediaError(.limitExceeded, operation: "open", item: item, message: bomb)
        }
        if let tooLarge = MediaFile.limitViolation(info, options) {
            throw MediaError(.limitExceeded, operation: "open", item: item, message: tooLarge)
        }
        self.demuxer = demuxer
        self.info = info
        self.pending = read ?? []
    }

    deinit {
        // The kept packets first, then the demuxer's deinit: the format context, the input, the interrupt retain.
        dropPendingPackets()
    }

    /// Whether the caller's token has been cancelled.
    package var isCancelled: Bool { interrupt.isCancelled }

    package func throwIfCancelled(_ operation: String) throws {
        if interrupt.isCancelled {
            throw MediaError(.cancelled, operation: operation, item: item, message: "cancelled by the caller")
        }
        if interrupt.itemExpired {
            throw MediaError(.timedOut, operation: operation, item: item,
                             message: "the item's time limit of \(options.itemTimeLimit ?? 0) s passed")
        }
    }

    /// Counts a decoded picture against the per-file limits: ``OpenOptions/maxDecodedFrames``,
    /// ``OpenOptions/maxDecodedBytes`` and the frame size limits (a stream may grow past its declared size).
    func accountDecoded(width: Int, height: Int, bytes: Int) throws {
        decodedFrames += 1
        decodedBytes += bytes
        let violation: String? = if width > options.maxDimension || height > options.maxDimension {
            "a decoded frame is \(width)x\(height), over the limit of \(options.maxDimension) per side"
        } else if width * height > options.maxPixelCount {
            "a decoded frame has \(width * height) pixels, over the limit of \(options.maxPixelCount)"
        } else if let limit = options.maxDecodedFrames, decodedFrames > limit {
            "more than \(limit) frames decoded"
        } else if let limit = options.maxDecodedBytes, decodedBytes > limit {
            "more than \(limit) bytes of pictures decoded"
        } else {
            nil
        }
        if let violation {
            throw MediaError(.limitExceeded, operation: "decode", item: item, message: violation)
        }
    }

    /// The format context, valid while this file lives; do not keep it past the call that uses it.
    package var context: UnsafeMutablePointer<AVFormatContext> { demuxer.raw }

    /// The I/O context's error, if the I/O layer hit one (see ``MediaInput/ioError``).
    private var ioError: Int32? { demuxer.input?.ioError }

    package func stream(at index: Int) -> UnsafeMutablePointer<AVStream> {
        precondition(index >= 0 && index < Int(context.pointee.nb_streams), "stream index out of range")
        return context.pointee.streams[index]!
    }

    /// A backstop to ``SampleTableScan`` for every container: more index entries than the file has bytes, or a
    /// stream whose index could not be built (the allocation failed under `av_max_alloc`) while it claims more
    /// frames than the file has bytes. The memory was spent already; failing frees it at once.
    private static func indexViolation(_ ctx: UnsafeMutablePointer<AVFormatContext>) -> String? {
        let size = avio_size(ctx.pointee.pb)
        guard size > 0 else { return nil }
        var entries: Int64 = 0
        for i in 0..<Int(ctx.pointee.nb_streams) {
            guard let stream = ctx.pointee.streams[i] else { continue }
            let count = Int64(avformat_index_get_entries_count(stream))
            entries += count
            if count == 0, stream.pointee.nb_frames > size {
                return "stream \(i) claims \(stream.pointee.nb_frames) frames in a file of \(size) bytes"
            }
        }
        if entries > size { return "the index has \(entries) entries for a file of \(size) bytes" }
        return nil
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

// MARK: - Reading

/// One demuxed packet step.
package enum PacketRead {
    case packet
    case endOfFile
}

extension MediaFile {
    /// Reads the next packet of any stream into `packet` (which the caller unrefs). The corresponding FFmpeg
    /// function is `av_read_frame`; its `AVERROR_EOF` is ``PacketRead/endOfFile``, not an error.
    package func readPacket(into packet: UnsafeMutablePointer<AVPacket>) throws -> PacketRead {
        try throwIfCancelled("read")
        if !pending.isEmpty {
            let first = pending.removeFirst()
            withExtendedLifetime(first) { av_packet_move_ref(packet, first.raw) }
            return .packet
        }
        interrupt.arm(seconds: options.readTimeout, for: .read)
        let result = av_read_frame(context, packet)
        interrupt.disarm()
        if result == vf_averror_eof() { return .endOfFile }
        if result < 0, let cause = ioError {
            // The connection failed or the time limit passed while the demuxer read: that is the error, not the
            // "invalid data" the demuxer may have made of the cut-short read.
            throw MediaError.ffmpeg(cause, operation: "read", item: item, interrupt: interrupt)
        }
        if result < 0 {
            // Like the ffmpeg CLI, corrupt data past the last readable packet ends the input rather than failing it
            // (e.g. an mdat box that claims more bytes than the file has); what was decoded so far stands.
            if result == vf_averror_invaliddata() { return .endOfFile }
            throw MediaError.ffmpeg(result, operation: "read", item: item, interrupt: interrupt)
        }
        return .packet
    }

    /// Seeks the demuxer to the keyframe of stream `index` at or before `seconds` (from the container's start),
    /// falling back to the default stream in `AV_TIME_BASE` for demuxers that only seek that way. Drops the packets
    /// kept from opening. The corresponding FFmpeg function is `av_seek_frame` with `AVSEEK_FLAG_BACKWARD`; the
    /// caller flushes its decoders.
    package func seekBackward(to seconds: Double, stream index: Int) throws {
        let tb = stream(at: index).pointee.time_base
        let ticks = ((seconds + info.startTime) * Double(tb.den) / Double(max(tb.num, 1))).rounded(.down)
        // A stream time base so fine that the target does not fit in 64 bits: seek to the end.
        let target = ticks.isFinite && abs(ticks) < 9e18 ? Int64(ticks) : Int64.max
        dropPendingPackets()
        interrupt.arm(seconds: options.readTimeout, for: .read)
        var result = av_seek_frame(context, Int32(index), target, vf_seek_flag_backward())
        if result < 0 {
            let global = Int64(min(max(seconds + info.startTime, 0), 1e12) * Double(vf_time_base()))
            result = av_seek_frame(context, -1, global, vf_seek_flag_backward())
        }
        interrupt.disarm()
        guard result >= 0 else {
            throw MediaError.ffmpeg(result, operation: "seek", item: item, interrupt: interrupt)
        }
    }

    /// Seeks the demuxer back to the item's first packet, for another pass over it; drops the packets kept from
    /// opening. An MPEG-TS or MPEG-PS demuxer has no seek of its own: FFmpeg's binary search on decode timestamps,
    /// which takes any packet for a keyframe, lands on the last packet of the default stream whose decode time is at
    /// or before the container's start. When the video's first keyframe is decoded before its presentation (B-frames)
    /// and its decode time precedes the audio's start, that is the packet after the keyframe, and nothing decodes
    /// until the next keyframe, up to a GOP (about a second) in. Those containers are seeked by byte to where their
    /// packets begin instead, which is where opening left them; others by `avformat_seek_file` to the start time.
    package func rewindToStart() throws {
        dropPendingPackets()
        let name = context.pointee.iformat?.pointee.name.map { String(cString: $0) } ?? ""
        interrupt.arm(seconds: options.readTimeout, for: .read)
        defer { interrupt.disarm() }
        if ["mpegts", "mpeg"].contains(name), (context.pointee.iformat.pointee.flags & vf_fmt_no_byte_seek()) == 0,
           av_seek_frame(context, -1, max(0, context.pointee.skip_initial_bytes), vf_seek_flag_byte()) >= 0 {
            return
        }
        let start = context.pointee.start_time == vf_nopts_value() ? 0 : context.pointee.start_time
        let result = avformat_seek_file(context, -1, Int64.min, start, start, 0)
        guard result >= 0 else { throw MediaError.ffmpeg(result, operation: "seek", item: item, interrupt: interrupt) }
    }

    /// Frees the packets kept from opening; called before a seek, after which they are stale.
    func dropPendingPackets() {
        pending.removeAll()
    }
}
