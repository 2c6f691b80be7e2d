internal import CFFmpeg

/// Versions of the FFmpeg libraries this process runs against.
public enum FFmpegVersion {
    /// `libavformat`, `libavcodec`, `libswscale` and `libavutil` versions as `major.minor.micro` strings.
    /// The corresponding FFmpeg functions are `avformat_version`, `avcodec_version`, `swscale_version`, `avutil_version`.
    public static var libraries: [String: String] {
        func text(_ v: UInt32) -> String { "\(v >> 16).\((v >> 8) & 0xFF).\(v & 0xFF)" }
        return [
            "libavformat": text(avformat_version()),
            "libavcodec": text(avcodec_version()),
            "libswscale": text(swscale_version()),
            "libavutil": text(avutil_version()),
        ]
    }
}
