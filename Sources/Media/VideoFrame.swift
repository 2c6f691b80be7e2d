internal import CFFmpeg

/// One decoded picture, as the decoder gave it (stored orientation, the stream's pixel format).
///
/// Owns a reference to FFmpeg's frame buffers (`AVFrame`), released on deinit. Convert it with ``FrameConverter``
/// into an ``Image`` to keep, display or encode it.
public final class VideoFrame {
    let frame: UnsafeMutablePointer<AVFrame>

    /// Presentation time in seconds from the start of the container (the frame's `best_effort_timestamp`, as the
    /// ffmpeg CLI uses it); nil when the stream gives no timestamp.
    public let time: Double?
    /// The raw presentation timestamp in ``timeBase`` units (`best_effort_timestamp`), when known.
    public let timestamp: Int64?
    /// The stream's time base.
    public let timeBase: Rational
    /// Duration in seconds, when the container or decoder knows it.
    public let duration: Double?
    /// Whether the decoder marked the frame a keyframe.
    public let isKeyframe: Bool
    /// Index of the decoded frame in decode output order since open or the last seek, from 0.
    public let sequenceNumber: Int
    /// How a player turns this picture upright: the stream's display matrix when the stream has one, else the
    /// frame's own (`AV_FRAME_DATA_DISPLAYMATRIX`: FFmpeg's JPEG decoder turns an EXIF Orientation 2–8 into one),
    /// else ``Orientation/identity``. ``FrameConverter`` with `upright: true` applies it.
    public let orientation: Orientation

    /// Takes ownership of `frame`. `streamOrientation` is the stream's display matrix, nil when it has none (then
    /// the frame's own matrix, if any, decides ``orientation``).
    init(takingOwnership frame: UnsafeMutablePointer<AVFrame>, timeBase: AVRational, startTime: Double, sequenceNumber: Int,
         streamOrientation: Orientation?) {
        self.frame = frame
        let noPTS = vf_nopts_value()
        let ts = frame.pointee.best_effort_timestamp != noPTS ? frame.pointee.best_effort_timestamp : frame.pointee.pts
        let tb = Double(timeBase.num) / Double(max(timeBase.den, 1))
        self.timestamp = ts != noPTS ? ts : nil
        self.time = ts != noPTS ? Double(ts) * tb - startTime : nil
        let d = vf_frame_duration(frame)
        self.duration = d > 0 ? Double(d) * tb : nil
        self.timeBase = Rational(timeBase)
        self.isKeyframe = vf_frame_is_key(frame) != 0
        self.sequenceNumber = sequenceNumber
        self.orientation = streamOrientation
            ?? vf_frame_display_matrix(frame).map { m in Orientation(displayMatrix: (0..<9).map { m[$0] }) }
            ?? .identity
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
    }

    /// Width and height of the stored picture.
    public var width: Int { Int(frame.pointee.width) }
    /// See ``width``.
    public var height: Int { Int(frame.pointee.height) }
    /// ``width`` and ``height`` together.
    public var size: Size { Size(width: width, height: height) }

    /// FFmpeg's name of the frame's pixel format, e.g. `"yuv420p"`.
    public var pixelFormatName: String {
        av_get_pix_fmt_name(AVPixelFormat(rawValue: frame.pointee.format)).map { String(cString: $0) } ?? "none"
    }

    /// Whether the decoder flagged the picture interlaced (two fields woven into one frame): shown as it is, moving
    /// edges comb. ``Deinterlacer`` turns such frames into progressive ones.
    public var isInterlaced: Bool { vf_frame_is_interlaced(frame) != 0 }

    /// Sample aspect ratio of the picture (`0/1` when unknown): the container's when it gives a valid one, else the
    /// bitstream's, as the ffmpeg CLI puts it on decoded frames (``VideoDecoder`` sets it).
    public var sampleAspectRatio: Rational { Rational(frame.pointee.sample_aspect_ratio) }

    /// Size in bytes of the picture packed without padding, as FFmpeg's `rawvideo` encoder packs it.
    /// The corresponding FFmpeg function is `av_image_get_buffer_size` with alignment 1.
    public var packedByteCount: Int {
        Int(av_image_get_buffer_size(AVPixelFormat(rawValue: frame.pointee.format), frame.pointee.width,
                                     frame.pointee.height, 1))
    }

    /// The picture packed without padding (planes one after another, palette last for paletted formats), byte for
    /// byte what `ffmpeg -f rawvideo` writes. The corresponding FFmpeg function is `av_image_copy_to_buffer`.
    public func packedBytes() -> [UInt8] {
        let count = packedByteCount
        guard count > 0 else { return [] }
        var written: Int32 = 0
        // av_image_copy_to_buffer fills all `count` bytes on success, so the buffer is not zeroed first.
        let out = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            written = withFramePlanes { data, linesize in
                av_image_copy_to_buffer(buffer.baseAddress, Int32(count), data, linesize,
                                        AVPixelFormat(rawValue: frame.pointee.format),
                                        frame.pointee.width, frame.pointee.height, 1)
            }
            if written < 0 { buffer.baseAddress!.initialize(repeating: 0, count: count) }
            initialized = count
        }
        return written > 0 ? out : []
    }

    /// MD5 of ``packedBytes()`` in lowercase hex: the hash column of FFmpeg's `framemd5` for this frame.
    public func packedMD5() -> String { MD5.hex(packedBytes()) }

    /// Runs `body` with the frame's plane pointers and line sizes as C arrays. Pointers must not escape `body`.
    func withFramePlanes<R>(
        _ body: (UnsafePointer<UnsafePointer<UInt8>?>, UnsafePointer<Int32>) -> R
    ) -> R {
        withUnsafePointer(to: &frame.pointee.data) { dataTuple in
            dataTuple.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { data in
                withUnsafePointer(to: &frame.pointee.linesize) { lineTuple in
                    lineTuple.withMemoryRebound(to: Int32.self, capacity: 8) { linesize in
                        body(data, linesize)
                    }
                }
            }
        }
    }
}

/// MD5 through libavutil (`av_md5_sum`).
public enum MD5 {
    /// The MD5 digest of `bytes` as 32 lowercase hex digits.
    public static func hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        bytes.withUnsafeBufferPointer { buffer in
            digest.withUnsafeMutableBufferPointer { out in
                av_md5_sum(out.baseAddress, buffer.baseAddress, buffer.count)
            }
        }
        let hexDigits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(32)
        for b in digest {
            text.append(hexDigits[Int(b >> 4)])
            text.append(hexDigits[Int(b & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
