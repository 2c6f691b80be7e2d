package import CFFmpeg

extension MediaFile {
    /// Builds a ``MediaInfo`` from an opened context (after `avformat_find_stream_info`).
    static func readInfo(_ ctx: UnsafeMutablePointer<AVFormatContext>) -> MediaInfo {
        let format = ctx.pointee.iformat!.pointee
        let noPTS = vf_nopts_value()
        let timeBase = Double(vf_time_base())
        let duration = ctx.pointee.duration != noPTS && ctx.pointee.duration > 0
            ? Double(ctx.pointee.duration) / timeBase : nil
        let start = ctx.pointee.start_time != noPTS ? Double(ctx.pointee.start_time) / timeBase : 0
        var streams: [StreamInfo] = []
        for i in 0..<Int(ctx.pointee.nb_streams) {
            streams.append(readStream(ctx.pointee.streams[i]!, in: ctx))
        }
        return MediaInfo(
            container: String(cString: format.name),
            containerLongName: format.long_name.map { String(cString: $0) } ?? "",
            duration: duration,
            bitRate: ctx.pointee.bit_rate > 0 ? Int(ctx.pointee.bit_rate) : nil,
            startTime: start,
            streams: streams
        )
    }

    static func readStream(_ stream: UnsafeMutablePointer<AVStream>,
                           in ctx: UnsafeMutablePointer<AVFormatContext>) -> StreamInfo {
        let par = stream.pointee.codecpar!.pointee
        let kind: StreamKind = switch par.codec_type {
        case AVMEDIA_TYPE_VIDEO: .video
        case AVMEDIA_TYPE_AUDIO: .audio
        case AVMEDIA_TYPE_SUBTITLE: .subtitle
        case AVMEDIA_TYPE_DATA: .data
        case AVMEDIA_TYPE_ATTACHMENT: .attachment
        default: .unknown
        }
        var pixelFormat: String? = nil
        var bitDepth: Int? = nil
        if kind == .video, par.format >= 0 {
            let fmt = AVPixelFormat(rawValue: par.format)
            pixelFormat = av_get_pix_fmt_name(fmt).map { String(cString: $0) }
            if let desc = av_pix_fmt_desc_get(fmt) { bitDepth = Int(desc.pointee.comp.0.depth) }
        }
        if bitDepth == nil, par.bits_per_raw_sample > 0, kind == .video { bitDepth = Int(par.bits_per_raw_sample) }

        var orientation = Orientation.identity
        if let m = vf_stream_display_matrix(stream) {
            orientation = Orientation(displayMatrix: (0..<9).map { m[$0] })
        }
        let tb = stream.pointee.time_base
        let noPTS = vf_nopts_value()
        let duration: Double? = stream.pointee.duration != noPTS && stream.pointee.duration > 0 && tb.den != 0
            ? Double(stream.pointee.duration) * Double(tb.num) / Double(tb.den) : nil
        let unspecifiedName = { (name: UnsafePointer<CChar>?) -> String? in
            guard let name else { return nil }
            let s = String(cString: name)
            return s == "unknown" || s == "reserved" || s == "unspecified" ? nil : s
        }
        // As ffprobe and the ffmpeg CLI take it: the container's (stream) SAR when valid, else the codec's.
        let sar = kind == .video ? av_guess_sample_aspect_ratio(ctx, stream, nil) : AVRational(num: 0, den: 1)
        var displayAspect: Rational? = nil
        if sar.num > 0, par.width > 0, par.height > 0 {
            // ffprobe's display_aspect_ratio, reduced with the same bound.
            var dar = AVRational(num: 0, den: 1)
            av_reduce(&dar.num, &dar.den, Int64(par.width) * Int64(sar.num), Int64(par.height) * Int64(sar.den),
                      1024 * 1024)
            displayAspect = Rational(dar)
        }
        let primaries = par.color_primaries == AVCOL_PRI_UNSPECIFIED ? nil : unspecifiedName(av_color_primaries_name(par.color_primaries))
        let transfer = par.color_trc == AVCOL_TRC_UNSPECIFIED ? nil : unspecifiedName(av_color_transfer_name(par.color_trc))
        let space = par.color_space == AVCOL_SPC_UNSPECIFIED ? nil : unspecifiedName(av_color_space_name(par.color_space))

        return StreamInfo(
            index: Int(stream.pointee.index),
            kind: kind,
            codec: String(cString: avcodec_get_name(par.codec_id)),
            width: kind == .video ? Int(par.width) : 0,
            height: kind == .video ? Int(par.height) : 0,
            pixelFormat: pixelFormat,
            bitDepth: bitDepth,
            averageFrameRate: Rational(stream.pointee.avg_frame_rate),
            baseFrameRate: Rational(stream.pointee.r_frame_rate),
            timeBase: Rational(tb),
            sampleAspectRatio: Rational(sar),
            displayAspectRatio: displayAspect,
            orientation: orientation,
            colorPrimaries: primaries,
            colorTransfer: transfer,
            colorSpace: space,
            isHDR: par.color_trc == AVCOL_TRC_SMPTE2084 || par.color_trc == AVCOL_TRC_ARIB_STD_B67,
            isAttachedPicture: (stream.pointee.disposition & vf_disposition_attached_pic()) != 0,
            duration: duration,
            startTime: stream.pointee.start_time != noPTS && tb.den != 0
                ? Double(stream.pointee.start_time) * Double(tb.num) / Double(tb.den) : nil,
            frameCount: stream.pointee.nb_frames > 0 ? Int(stream.pointee.nb_frames) : nil,
            sampleRate: kind == .audio ? Int(par.sample_rate) : 0,
            channels: kind == .audio ? Int(par.ch_layout.nb_channels) : 0
        )
    }
}

extension Rational {
    package init(_ r: AVRational) { self.init(Int(r.num), Int(r.den)) }
}
