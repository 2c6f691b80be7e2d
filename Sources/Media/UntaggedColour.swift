package import CFFmpeg

/// The YCbCr matrix of a picture whose stream does not name one: BT.709 at HD sizes (at least 1280 wide or more than
/// 576 tall, portrait or landscape), BT.601 below that and for full-range (JPEG) pictures. That is how players
/// show such video (mpv's rule; browsers take untagged HD to be BT.709), so renditions, posters and frames show it
/// as the viewer saw the upload. A tagged picture keeps its own matrix.
///
/// It also keeps an HD transcode cheap: a source read as BT.709 goes into BT.709 renditions without libswscale's
/// matrix conversion, which runs every picture through RGB and doubled the ladder's scaling time.
package enum UntaggedColour {
    /// The matrix `frame` is read with: its own, else the guess above.
    package static func matrix(of frame: UnsafePointer<AVFrame>) -> AVColorSpace {
        let own = frame.pointee.colorspace
        guard own == AVCOL_SPC_UNSPECIFIED else { return own }
        let format = AVPixelFormat(rawValue: frame.pointee.format)
        let fullRange = frame.pointee.color_range == AVCOL_RANGE_JPEG || format == AV_PIX_FMT_YUVJ420P
            || format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P || format == AV_PIX_FMT_YUVJ440P
        return !fullRange && isHD(width: Int(frame.pointee.width), height: Int(frame.pointee.height))
            ? AVCOL_SPC_BT709 : AVCOL_SPC_SMPTE170M
    }

    /// Whether a stored picture of this size counts as HD.
    package static func isHD(width: Int, height: Int) -> Bool {
        max(width, height) >= 1280 || min(width, height) > 576
    }
}
