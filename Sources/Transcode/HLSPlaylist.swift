import Foundation
import Media

/// HLS playlists (RFC 8216) for CMAF renditions.
public enum HLSPlaylist {
    /// A VOD media playlist: `EXT-X-MAP` names the initialisation segment, one `EXTINF` per media segment.
    public static func media(initSegment: String, segments: [(uri: String, duration: Double)]) -> String {
        let target = max(1, Int((segments.map(\.duration).max() ?? 1).rounded(.up)))
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:\(target)", "#EXT-X-MEDIA-SEQUENCE:0",
                     "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-MAP:URI=\"\(initSegment)\""]
        for segment in segments {
            lines.append("#EXTINF:\(String(format: "%.6f", segment.duration)),")
            lines.append(segment.uri)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A multivariant playlist with one variant per rendition. `BANDWIDTH` is the peak rate (RFC 8216 4.4.6.2);
    /// an `averageBandwidth` of 0 (not measured yet, as when `serve` lists an item before making it) is left out.
    public static func multivariant(_ variants: [(uri: String, bandwidth: Int, averageBandwidth: Int, width: Int,
                                                  height: Int, codecs: String)]) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-INDEPENDENT-SEGMENTS"]
        for v in variants {
            let average = v.averageBandwidth > 0 ? "AVERAGE-BANDWIDTH=\(v.averageBandwidth)," : ""
            lines.append("#EXT-X-STREAM-INF:BANDWIDTH=\(v.bandwidth),\(average)"
                + "RESOLUTION=\(v.width)x\(v.height),CODECS=\"\(v.codecs)\"")
            lines.append(v.uri)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
