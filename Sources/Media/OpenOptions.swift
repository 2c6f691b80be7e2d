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
    /// Largest accepted width or height of a video stream.
    public var maxDimension: Int = 16384

    /// How the streams are described after the container's header is read.
    public var streamInfo: StreamInfoMode = .probe

    /// The defaults described on each property, with `streamInfo` as given.
    public init(streamInfo: StreamInfoMode = .probe) {
        self.streamInfo = streamInfo
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
    /// pixel format (where HDR signalling may live only in the bitstream) — falls back to ``probe``. Saves the
    /// decode of one picture per open: what a thumbnail batch and a feed's first frame want. The file's overall
    /// bit rate may be missing in this mode.
    case header
}
