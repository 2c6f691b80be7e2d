import Foundation
import Media

/// Which HDR → SDR tone mapping a thumbnail's source needed, as cards and results report it. The mapping itself is
/// libavfilter's, the renditions' own (Media's `FrameConverter` with `toneMapsHDR`: `zscale` to linear light, BT.709
/// primaries, `tonemap=hable`), so a poster shows what the video's first frame shows.
public enum ToneMapping: String, Sendable, Hashable, Codable {
    /// SDR source: nothing to do.
    case none
    /// SMPTE ST 2084 (`smpte2084`).
    case pq
    /// ARIB STD-B67 hybrid log-gamma (`arib-std-b67`).
    case hlg

    /// The mapping a stream needs, from its transfer characteristic.
    public init(stream: StreamInfo) {
        switch stream.colorTransfer {
        case "smpte2084": self = .pq
        case "arib-std-b67": self = .hlg
        default: self = .none
        }
    }
}
