internal import CFFmpeg

extension MediaFile {
    /// Demuxers that read other URLs named inside the item: playlists and edit lists. Opened only with
    /// ``OpenOptions/allowsPlaylists``; a remote one's nested opens never reach `file:`.
    public static let playlistFormats: Set<String> = ["hls", "dash", "concat", "imf"]

    /// Demuxers never opened: they reach other files or the network in ways the protocol whitelist cannot confine
    /// (MLV's sibling chunk files, SDP/RTSP/RTP sessions, scripts that run code).
    public static let refusedFormats: Set<String> = ["mlv", "sdp", "rtsp", "rtp", "avisynth", "vapoursynth"]

    /// Why `format` (a demuxer's comma-separated names) may not be opened under `options`, or nil when it may.
    static func formatRefusal(_ format: String, options: OpenOptions) -> String? {
        let names = format.split(separator: ",").map(String.init)
        if let name = names.first(where: refusedFormats.contains) {
            return "the '\(name)' format opens other files or streams by itself and is never opened"
        }
        if !options.allowsPlaylists, let name = names.first(where: playlistFormats.contains) {
            return "the '\(name)' format opens the URLs it lists; playlists are refused unless allowed"
        }
        return nil
    }

    /// The demuxers a nested open may use (`format_whitelist`, which HLS and concat copy into the formats they open
    /// for their entries): every demuxer of this FFmpeg build but the refused ones, and the playlists unless allowed.
    static func formatWhitelist(allowsPlaylists: Bool) -> String {
        allowsPlaylists ? demuxerNames.withPlaylists : demuxerNames.withoutPlaylists
    }

    private static let demuxerNames: (withPlaylists: String, withoutPlaylists: String) = {
        var names: [String] = []
        var seen = Set<String>()
        var state: UnsafeMutableRawPointer? = nil
        while let demuxer = av_demuxer_iterate(&state) {
            for name in String(cString: demuxer.pointee.name).split(separator: ",").map(String.init)
            where !refusedFormats.contains(name) && seen.insert(name).inserted {
                names.append(name)
            }
        }
        return (names.joined(separator: ","), names.filter { !playlistFormats.contains($0) }.joined(separator: ","))
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
