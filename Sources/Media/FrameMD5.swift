internal import CFFmpeg

/// Writes FFmpeg's `framemd5` text format (version 2) for one video stream, line for line what
/// `ffmpeg -noautorotate -i FILE -map 0:v:0 -fps_mode passthrough -f framemd5 -` prints: a header, then per frame
/// `stream, dts, pts, duration, size, md5` with timestamps in the time base `1/frame rate` that the ffmpeg CLI uses.
public struct FrameMD5Writer: Sendable {
    /// The output time base: the inverse of FFmpeg's guessed frame rate for the stream (`av_guess_frame_rate`).
    public let timeBase: Rational
    private var headerWritten = false

    /// - Parameter decoder: the decoder whose stream is hashed; its guessed frame rate sets the time base.
    public init(decoder: VideoDecoder) {
        let stream = decoder.file.stream(at: decoder.stream.index)
        let rate = av_guess_frame_rate(decoder.file.context, stream, nil)
        timeBase = rate.num > 0 && rate.den > 0 ? Rational(Int(rate.den), Int(rate.num)) : Rational(1, 25)
    }

    /// The header, for a first frame of `size` and sample aspect ratio `sar`.
    public func header(size: Size, sampleAspectRatio sar: Rational) -> String {
        let version = avformat_version()
        let sarText = sar.description
        return """
        #format: frame checksums
        #version: 2
        #hash: MD5
        #software: Lavf\(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)
        #tb 0: \(timeBase)
        #media_type 0: video
        #codec_id 0: rawvideo
        #dimensions 0: \(size)
        #sar 0: \(sarText)
        #stream#, dts,        pts, duration,     size, hash

        """
    }

    /// One frame line; `time` is the frame's time in seconds (``VideoFrame/time``).
    public func line(time: Double?, byteCount: Int, md5: String) -> String {
        let ticks = time.map { Int64(($0 * Double(timeBase.denominator) / Double(timeBase.numerator)).rounded(.toNearestOrEven)) } ?? 0
        return "0, \(pad(ticks, 10)), \(pad(ticks, 10)), \(pad(1, 8)), \(pad(Int64(byteCount), 8)), \(md5)\n"
    }

    /// The header (before the first frame) and the line for `frame`, hashed as the decoder gave it.
    public mutating func lines(for frame: VideoFrame) -> String {
        var text = ""
        if !headerWritten {
            // The decoder already put the container's sample aspect ratio on the frame, as the ffmpeg CLI does.
            text += header(size: frame.size, sampleAspectRatio: frame.sampleAspectRatio)
            headerWritten = true
        }
        let bytes = frame.packedBytes()
        return text + line(time: frame.time, byteCount: bytes.count, md5: MD5.hex(bytes))
    }

    /// The header (before the first frame) and the line for a converted `image` shown at `time`.
    public mutating func lines(for image: Image, time: Double?) -> String {
        var text = ""
        if !headerWritten {
            text += header(size: image.size, sampleAspectRatio: Rational(1, 1))
            headerWritten = true
        }
        return text + line(time: time, byteCount: image.bytes.count, md5: image.md5)
    }

    private func pad(_ value: Int64, _ width: Int) -> String {
        let s = String(value)
        return s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }
}
