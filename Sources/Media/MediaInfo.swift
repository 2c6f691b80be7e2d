/// What ``MediaFile`` learns about an item when it opens it: the container and each stream.
/// The values are those `ffprobe -show_format -show_streams` reports.
public struct MediaInfo: Sendable, Equatable, Codable {
    /// FFmpeg's short name of the demuxer, e.g. `"mov,mp4,m4a,3gp,3g2,mj2"`, `"matroska,webm"`, `"png_pipe"`.
    public var container: String
    /// FFmpeg's long name of the demuxer, e.g. `"QuickTime / MOV"`.
    public var containerLongName: String
    /// Duration in seconds, when the container knows it.
    public var duration: Double?
    /// Overall bit rate in bits per second, when known.
    public var bitRate: Int?
    /// Start time of the container in seconds (usually 0); frame times are reported relative to it.
    public var startTime: Double
    /// All streams, in container order.
    public var streams: [StreamInfo]
    /// For a HEIC or AVIF photo, which libheif decoded into the one-picture stream FFmpeg then demuxed (the
    /// container is then `pam_pipe`): what the photo itself is. Nil for everything else.
    public var photo: PhotoInfo? = nil

    /// The video stream a player would show: the first video stream that is not a cover picture, else the first
    /// cover picture (audio files with cover art), else nil.
    public var primaryVideoStream: StreamInfo? {
        streams.first { $0.kind == .video && !$0.isAttachedPicture } ?? streams.first { $0.kind == .video }
    }

    /// The first video stream in container order, as `ffmpeg -map 0:v:0` picks it.
    public var firstVideoStream: StreamInfo? { streams.first { $0.kind == .video } }
}

/// The type of a stream's payload.
public enum StreamKind: String, Sendable, Equatable, Codable {
    /// Pictures, including cover pictures (see ``StreamInfo/isAttachedPicture``).
    case video
    /// Sound.
    case audio
    /// Subtitles or captions.
    case subtitle
    /// Timed metadata or other data.
    case data
    /// Files attached to the container (fonts in Matroska).
    case attachment
    /// Anything FFmpeg does not classify.
    case unknown
}

/// A frame rate or time base as a fraction, kept exact.
public struct Rational: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    /// The numerator.
    public var numerator: Int
    /// The denominator.
    public var denominator: Int

    /// The fraction `numerator/denominator`, kept as given (not reduced).
    public init(_ numerator: Int, _ denominator: Int) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The value as a `Double`, or nil when the denominator or the numerator is 0 (FFmpeg's "unknown").
    public var value: Double? {
        guard denominator != 0, numerator != 0 else { return nil }
        return Double(numerator) / Double(denominator)
    }

    /// `num/den`, as ffprobe prints it.
    public var description: String { "\(numerator)/\(denominator)" }
}

/// One stream of a ``MediaInfo``.
public struct StreamInfo: Sendable, Equatable, Codable {
    /// Index of the stream in the container.
    public var index: Int
    /// What the stream carries.
    public var kind: StreamKind
    /// FFmpeg's codec name, e.g. `"h264"`, `"hevc"`, `"vp9"`, `"mjpeg"`.
    public var codec: String
    /// Stored (coded) width and height in pixels; 0 for non-video streams.
    public var width: Int
    /// See ``width``.
    public var height: Int
    /// FFmpeg's pixel format name, e.g. `"yuv420p"`, `"yuv420p10le"`; nil when unknown or not video.
    public var pixelFormat: String?
    /// Bits per colour component (8, 10, 12 …), from the pixel format; nil when unknown.
    public var bitDepth: Int?
    /// Average frame rate (`avg_frame_rate`).
    public var averageFrameRate: Rational
    /// Base frame rate (`r_frame_rate`): the lowest rate all timestamps can be represented in.
    public var baseFrameRate: Rational
    /// Stream time base.
    public var timeBase: Rational
    /// Sample aspect ratio (`0/1` when unknown), as FFmpeg takes it: the container's when it gives a valid one
    /// (an MP4 `pasp` box, a Matroska display size), else the bitstream's (an H.264/HEVC VUI, an H.263 picture
    /// format). The corresponding FFmpeg function is `av_guess_sample_aspect_ratio`, the value ffprobe prints.
    public var sampleAspectRatio: Rational
    /// Width to height of the picture as shown before rotation (stored size times ``sampleAspectRatio``, reduced),
    /// ffprobe's `display_aspect_ratio`; nil when the sample aspect ratio is unknown or the stream is not video.
    public var displayAspectRatio: Rational? = nil
    /// How a player turns the stored picture upright, from the display matrix.
    public var orientation: Orientation
    /// Colour primaries name, e.g. `"bt709"`, `"bt2020"`; nil when unspecified.
    public var colorPrimaries: String?
    /// Transfer characteristic name, e.g. `"bt709"`, `"smpte2084"` (PQ), `"arib-std-b67"` (HLG); nil when unspecified.
    public var colorTransfer: String?
    /// Colour matrix name, e.g. `"bt709"`, `"bt2020nc"`; nil when unspecified.
    public var colorSpace: String?
    /// Whether the transfer is PQ (SMPTE ST 2084) or HLG (ARIB STD-B67).
    public var isHDR: Bool
    /// Whether the stream is a cover picture (`AV_DISPOSITION_ATTACHED_PIC`): one frame, not a video.
    public var isAttachedPicture: Bool
    /// Stream duration in seconds, when known.
    public var duration: Double?
    /// When the stream starts, in seconds on the container's clock (``MediaInfo/startTime`` is the earliest of all
    /// streams), when known.
    public var startTime: Double? = nil
    /// Number of frames the container declares, when it does.
    public var frameCount: Int?
    /// Audio sample rate and channel count; 0 for non-audio streams.
    public var sampleRate: Int
    /// See ``sampleRate``.
    public var channels: Int

    /// Rotation in degrees clockwise (0, 90, 180, 270) a player applies, after mirroring when ``mirrored``.
    public var rotation: Int { orientation.rotation }
    /// Whether a player mirrors the picture horizontally (before rotating).
    public var mirrored: Bool { orientation.mirrored }

    /// Width and height as a player shows them: rotation applied, and the sample aspect ratio when not square.
    public var displaySize: Size {
        var w = Double(width)
        let h = Double(height)
        if let sar = sampleAspectRatio.value, sar > 0, abs(sar - 1) > 1e-6 { w = (w * sar).rounded() }
        let size = Size(width: Int(w), height: Int(h))
        return orientation.swapsAxes ? Size(width: size.height, height: size.width) : size
    }
}

/// A width and a height in pixels.
public struct Size: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// A size of `width`×`height` pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses `"WxH"` (e.g. `"720x1280"`); nil unless both are positive integers.
    public init?(parsing text: String) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        self.init(width: w, height: h)
    }

    /// `WxH`.
    public var description: String { "\(width)x\(height)" }
}
