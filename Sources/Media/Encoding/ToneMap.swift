package import CFFmpeg

/// The one HDR → SDR tone mapping: libavfilter's, as the usual ffmpeg command does it (`zscale` to linear light,
/// BT.709 primaries, `tonemap=hable`, back to BT.709 limited range, 8-bit 4:2:0). Renditions (`Transcoder`'s
/// branches) and pictures (``FrameConverter`` with `toneMapsHDR`: thumbnails and posters) both go through it, so a
/// poster shows what the video's first frame shows. The first `zscale` also resizes, so the float stages run on the
/// output's pixels, not the source's (a 720x405 rendition of a 1920x1080 HDR10 source: 7× fewer).
package struct ToneMap {
    /// `zscale` options naming the input's transfer (and primaries, matrix, range where the frame has none).
    package let input: String

    /// The mapping `frame` needs: nil unless its transfer is PQ (SMPTE ST 2084) or HLG (ARIB STD-B67). What the frame
    /// does not say of itself is taken as HDR10 and HLG sources are: BT.2020 primaries and matrix, limited range.
    package static func of(_ frame: UnsafePointer<AVFrame>) -> ToneMap? {
        let trc = frame.pointee.color_trc
        guard trc == AVCOL_TRC_SMPTE2084 || trc == AVCOL_TRC_ARIB_STD_B67 else { return nil }
        var input = "tin=" + (trc == AVCOL_TRC_SMPTE2084 ? "smpte2084" : "arib-std-b67")
        if frame.pointee.color_primaries == AVCOL_PRI_UNSPECIFIED { input += ":pin=bt2020" }
        if frame.pointee.colorspace == AVCOL_SPC_UNSPECIFIED { input += ":min=bt2020nc" }
        if frame.pointee.color_range == AVCOL_RANGE_UNSPECIFIED { input += ":rin=tv" }
        return ToneMap(input: input)
    }

    /// The filter chain, resizing to `width`x`height` (the stored orientation's, even) on the way.
    package func filters(width: Int, height: Int) -> String {
        "zscale=w=\(width):h=\(height):f=bicubic:\(input):t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,"
            + "tonemap=tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p"
    }
}
