/// How ``MediaFile`` opens an item: which protocols FFmpeg may use, time limits and size limits.
public struct OpenOptions: Sendable, Equatable {
    /// Protocols FFmpeg may use, passed to it as `protocol_whitelist`. The default lets local files and HTTP(S)
    /// through (with the `tcp` and `tls` layers HTTP(S) runs on) and nothing else.
    public var protocolWhitelist: [String] = ["file", "http", "https", "tcp", "tls"]
    /// Limit on opening the item and reading its stream information, in seconds. `nil` means none.
    public var openTimeout: Double? = 30
    /// Limit on any one blocking read after opening, in seconds. `nil` means none.
    public var readTimeout: Double? = 30
    /// Largest accepted video frame in pixels (width × height). Larger declared sizes fail with
    /// ``MediaError/Kind/limitExceeded`` before any frame is decoded.
    public var maxPixelCount: Int = 8192 * 8192
    /// Largest accepted width or height of a video stream. Checked on the declared size when opening and on every
    /// decoded frame (a stream may change size midway); the decoder also refuses to allocate larger pictures
    /// (`AVCodecContext.max_pixels`).
    public var maxDimension: Int = 16384
    /// Whether formats that open other URLs — HLS, DASH, concat/ffconcat scripts, IMF — may be opened. Off by
    /// default: an untrusted playlist can name local files and put their bytes into a thumbnail. Even when on, an
    /// item that is not a local file never reaches `file:`: its nested opens use the whitelist without `file`.
    /// Formats that open other files by themselves with no way to confine them (image sequence patterns, MLV's
    /// sibling chunks, SDP/RTSP/RTP sessions, script demuxers) are refused either way; see ``MediaFile/refusedFormats``.
    public var allowsPlaylists: Bool = false
    /// The demuxers that may open the item (and anything it opens), by name; `nil` for every demuxer of the FFmpeg
    /// build but the refused ones. ``untrusted(streamInfo:)`` sets ``MediaFile/feedFormats``. Text-art demuxers
    /// (``MediaFile/textFormats``) and ``MediaFile/refusedFormats`` are refused either way.
    public var allowedFormats: Set<String>? = nil
    /// The most streams a container may have (FFmpeg's `max_streams`); `nil` for FFmpeg's default (1000).
    /// ``untrusted(streamInfo:)`` sets 100 (a multi-language remux has a few dozen): each stream's index costs memory
    /// while the header is read.
    public var maxStreams: Int? = nil
    /// Largest total of decoded picture bytes (the size of every decoded frame, added up) for one opened file,
    /// over all of its decoders. `nil` means none. Bounds the work a decompression bomb can cause.
    public var maxDecodedBytes: Int? = nil
    /// Largest number of frames decoded from one opened file, over all of its decoders. `nil` means none.
    public var maxDecodedFrames: Int? = nil
    /// Wall-clock limit for one item, in seconds, from the start of opening until the file is done with: it ends
    /// a blocking open or read (through the interrupt callback) and the next decode step with
    /// ``MediaError/Kind/timedOut``. `nil` means none.
    public var itemTimeLimit: Double? = nil

    /// How the streams are described after the container's header is read.
    public var streamInfo: StreamInfoMode = .probe

    /// The defaults described on each property, with `streamInfo` as given.
    public init(streamInfo: StreamInfoMode = .probe) {
        self.streamInfo = streamInfo
    }

    /// Limits for items from strangers (a thumbnail batch over uploads, a feed from a server): the defaults plus
    /// 2 GiB of decoded pictures, 3000 decoded frames and 60 s per item, and only the demuxers of what a feed holds
    /// (``MediaFile/feedFormats``).
    public static func untrusted(streamInfo: StreamInfoMode = .probe) -> OpenOptions {
        var options = OpenOptions(streamInfo: streamInfo)
        options.allowedFormats = MediaFile.feedFormats
        options.maxStreams = 100
        options.maxDecodedBytes = 2 << 30
        options.maxDecodedFrames = 3000
        options.itemTimeLimit = 60
        return options
    }
}

/// How ``MediaFile`` completes its ``MediaInfo`` after reading the container's header.
public enum StreamInfoMode: Sendable, Equatable {
    /// Always as ffprobe does (`avformat_find_stream_info`): reads packets and decodes the first frame of each
    /// stream whose header leaves something out. Exact for every container; costs about one decoded picture.
    case probe
    /// Trust a header that already describes every stream, as MP4/MOV's does, and take a missing 8-bit pixel format
    /// from the codec's parser on the first video packet (which is kept and handed to the decoder, so nothing is
    /// read twice); anything else — another container, a missing size or sample rate, a high-bit-depth or unknown
    /// pixel format (where HDR signalling may live only in the bitstream), a video stream whose container gives no
    /// sample aspect ratio and whose bitstream may carry one that only decoding reveals (anything but H.264, whose
    /// SPS is read from the `avcC` record, and VP8/VP9, which carry none) — falls back to ``probe``. Saves the
    /// decode of one picture per open: what a thumbnail batch and a feed's first frame want. The file's overall
    /// bit rate may be missing in this mode.
    case header
}
