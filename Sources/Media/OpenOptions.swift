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

    /// The defaults described on each property.
    public init() {}
}
