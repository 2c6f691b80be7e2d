internal import CFFmpeg

extension MediaFile {
    /// Demuxers that read other URLs named inside the item: playlists and edit lists. Opened only with
    /// ``OpenOptions/allowsPlaylists``; a remote one's nested opens never reach `file:`.
    public static let playlistFormats: Set<String> = ["hls", "dash", "concat", "imf"]

    /// Demuxers never opened: they reach other files or the network in ways the protocol whitelist cannot confine
    /// (MLV's sibling chunk files, SDP/RTSP/RTP sessions, scripts that run code).
    public static let refusedFormats: Set<String> = ["mlv", "sdp", "rtsp", "rtp", "avisynth", "vapoursynth"]

    /// Demuxers that turn any text into pictures (ANSI/ASCII art: `tty` takes `.txt`, `.nfo`, `.ans`, `.asc`,
    /// `.diz`; `bintext`, `xbin`, `adf`, `idf`): never opened, so that a text file named as a feed item — a
    /// password file, a key — never becomes a thumbnail or a frame someone can look at.
    public static let textFormats: Set<String> = ["tty", "bin", "bintext", "xbin", "adf", "idf"]

    /// The demuxers for what a feed holds, which ``OpenOptions/untrusted(streamInfo:)`` allows and nothing else:
    /// the containers phones, cameras, editors and encoders write (MP4/MOV/3GP, Matroska/WebM, AVI, MPEG-TS and PS,
    /// FLV, ASF/WMV, Ogg, MXF, DV), raw video elementary streams, still and animated images (each `*_pipe` image
    /// demuxer, `image2` held to the one named file, `heif` for HEIC and AVIF photos through libheif), and audio
    /// files with cover art. Hundreds of other demuxers (game and demo-scene formats, subtitles, raw PCM, text art)
    /// are attack surface a feed never needs.
    public static let feedFormats: Set<String> = [
        "mov", "mp4", "m4a", "3gp", "3g2", "mj2", "matroska", "webm", "avi", "mpegts", "mpeg", "mpegvideo", "flv",
        "asf", "ogg", "mxf", "dv", "nut", "h264", "hevc", "m4v", "ivf", "obu", "av1", "mjpeg", "h263",
        "image2", "image2pipe", "gif", "apng", "jpeg_pipe", "jpegls_pipe", "png_pipe", "webp_pipe", "gif_pipe",
        "bmp_pipe", "tiff_pipe", "jpegxl_pipe", "j2k_pipe", "psd_pipe", "qoi_pipe", "dpx_pipe", "exr_pipe",
        "pam_pipe", "pbm_pipe", "pgm_pipe", "ppm_pipe", "svg_pipe",
        // HEIC and AVIF photos: not an FFmpeg demuxer but libheif (MediaFile+Photo), whose picture FFmpeg then
        // opens as a PAM.
        "heif",
        "mp3", "aac", "flac", "wav", "aiff", "caf", "amr", "amrnb", "amrwb", "ac3", "eac3",
        // Playlists, still refused unless OpenOptions.allowsPlaylists.
        "hls", "dash", "concat", "imf",
    ]

    /// Why `format` (a demuxer's comma-separated names) may not be opened under `options`, or nil when it may.
    static func formatRefusal(_ format: String, options: OpenOptions) -> String? {
        let names = format.split(separator: ",").map(String.init)
        if let name = names.first(where: refusedFormats.contains) {
            return "the '\(name)' format opens other files or streams by itself and is never opened"
        }
        if let name = names.first(where: textFormats.contains) {
            return "the '\(name)' format turns text into pictures; a text file is not media and is never opened"
        }
        if let allowed = options.allowedFormats, !names.contains(where: allowed.contains) {
            return "the '\(format)' format is not one a feed holds (video in MP4/MOV, WebM/Matroska, AVI, MPEG-TS/PS, "
                + "FLV, ASF, Ogg, MXF or DV, a raw video stream, an image, or audio with a cover picture)"
        }
        if !options.allowsPlaylists, let name = names.first(where: playlistFormats.contains) {
            return "the '\(name)' format opens the URLs it lists; playlists are refused unless allowed"
        }
        return nil
    }

    /// The demuxers a nested open may use (`format_whitelist`, which HLS and concat copy into the formats they open
    /// for their entries): every demuxer of this FFmpeg build but the refused and text ones, only those of
    /// ``OpenOptions/allowedFormats`` when it is set, and the playlists unless allowed.
    static func formatWhitelist(_ options: OpenOptions) -> String {
        demuxerNames.filter { name in
            (options.allowsPlaylists || !playlistFormats.contains(name))
                && (options.allowedFormats.map { $0.contains(name) } ?? true)
        }.joined(separator: ",")
    }

    /// Every demuxer name of this FFmpeg build (each of a demuxer's comma-separated names), but the refused ones.
    private static let demuxerNames: [String] = {
        var names: [String] = []
        var seen = Set<String>()
        var state: UnsafeMutableRawPointer? = nil
        while let demuxer = av_demuxer_iterate(&state) {
            for name in String(cString: demuxer.pointee.name).split(separator: ",").map(String.init)
            where !refusedFormats.contains(name) && !textFormats.contains(name) && seen.insert(name).inserted {
                names.append(name)
            }
        }
        return names
    }()

    /// The protocols FFmpeg may use for an item and everything it opens: the caller's whitelist, without `file`
    /// when the item itself is not a local file, so that a remote playlist (or a redirect) never reads local files.
    /// Memory input may open nothing at all.
    static func effectiveWhitelist(_ options: OpenOptions, local: Bool?) -> String {
        guard let local else { return "none" }
        let list = local ? options.protocolWhitelist : options.protocolWhitelist.filter { $0 != "file" }
        return list.isEmpty ? "none" : list.joined(separator: ",")
    }
}
