internal import CFFmpeg

extension MediaFile {
    /// The MP4/MOV demuxer's name: its header (the `moov` box) describes every stream's codec, size, timing and
    /// colour, so only the pixel format is left for ``StreamInfoMode/header`` to find.
    private static let headerDescribedContainers: Set<String> = ["mov,mp4,m4a,3gp,3g2,mj2"]

    /// For ``StreamInfoMode/header``: completes the streams' parameters without `avformat_find_stream_info` when the
    /// container's header allows it. On success returns the packets read on the way (the caller hands them out
    /// before reading more); nil when the caller must probe as usual — the file is then back at its first packet.
    static func completeFromHeader(_ ctx: UnsafeMutablePointer<AVFormatContext>) -> [Packet]? {
        guard let name = ctx.pointee.iformat?.pointee.name,
              headerDescribedContainers.contains(String(cString: name)) else { return nil }
        var missing: [Int] = []
        var aspects: [(stream: Int, sar: AVRational)] = []
        for i in 0..<Int(ctx.pointee.nb_streams) {
            let par = ctx.pointee.streams[i]!.pointee.codecpar!.pointee
            switch par.codec_type {
            case AVMEDIA_TYPE_VIDEO:
                guard par.codec_id != AV_CODEC_ID_NONE, par.width > 0, par.height > 0,
                      let sar = bitstreamAspectRatio(ctx.pointee.streams[i]!) else { return nil }
                if let sar { aspects.append((i, sar)) }
                if par.format < 0 { missing.append(i) }
            case AVMEDIA_TYPE_AUDIO:
                guard par.codec_id != AV_CODEC_ID_NONE, par.sample_rate > 0, par.ch_layout.nb_channels > 0 else {
                    return nil
                }
            default:
                continue
            }
        }
        // Where the decoder would put it, so `av_guess_sample_aspect_ratio` finds it as after a full probe.
        let settleAspects = {
            for (i, sar) in aspects { ctx.pointee.streams[i]!.pointee.codecpar.pointee.sample_aspect_ratio = sar }
        }
        if missing.isEmpty {
            settleAspects()
            return []
        }
        // One stream's format from its parser; several (or a cover picture) are left to the full probe.
        guard missing.count == 1 else { return nil }
        let target = missing[0]
        let stream = ctx.pointee.streams[target]!
        guard (stream.pointee.disposition & vf_disposition_attached_pic()) == 0,
              let parser = av_parser_init(Int32(stream.pointee.codecpar.pointee.codec_id.rawValue)) else { return nil }
        defer { av_parser_close(parser) }
        var codec = avcodec_alloc_context3(nil)
        defer { avcodec_free_context(&codec) }
        guard let codec, avcodec_parameters_to_context(codec, stream.pointee.codecpar) >= 0 else { return nil }
        parser.pointee.flags |= PARSER_FLAG_COMPLETE_FRAMES

        var read: [Packet] = []
        var firstDTS: Int64? = nil
        var format: Int32 = -1
        while read.count < 64, firstDTS == nil {
            guard let packet = Packet(), av_read_frame(ctx, packet.raw) >= 0 else { break }
            read.append(packet)
            let p = packet.raw.pointee
            guard Int(p.stream_index) == target else { continue }
            firstDTS = p.dts
            var out: UnsafeMutablePointer<UInt8>? = nil
            var outSize: Int32 = 0
            _ = av_parser_parse2(parser, codec, &out, &outSize, p.data, p.size, p.pts, p.dts, p.pos)
            format = parser.pointee.format
        }
        if format >= 0, let desc = av_pix_fmt_desc_get(AVPixelFormat(rawValue: format)),
           desc.pointee.comp.0.depth == 8 {
            stream.pointee.codecpar.pointee.format = format
            settleAspects()
            return read
        }
        // Not settled here: the packets are freed with `read`; rewind for the full probe.
        if let firstDTS, firstDTS != vf_nopts_value() {
            _ = av_seek_frame(ctx, Int32(target), firstDTS, vf_seek_flag_backward())
        } else if !read.isEmpty {
            _ = av_seek_frame(ctx, -1, 0, vf_seek_flag_backward())
        }
        return nil
    }

    /// The sample aspect ratio the decoder would give a video stream whose container gives none, read without
    /// decoding: `.some(nil)` when nothing is to be read (the container's is valid and wins, or the codec carries
    /// none: VP8, VP9), `.some(sar)` from an H.264 `avcC`'s SPS, and nil when only decoding can tell (every other
    /// codec that may carry one: HEVC, MPEG-4 part 2, H.263, AV1, MJPEG …) — the caller then probes in full.
    private static func bitstreamAspectRatio(_ stream: UnsafeMutablePointer<AVStream>) -> AVRational?? {
        let container = stream.pointee.sample_aspect_ratio
        if container.num > 0 && container.den > 0 { return .some(nil) }
        let par = stream.pointee.codecpar!
        switch par.pointee.codec_id {
        case AV_CODEC_ID_VP8, AV_CODEC_ID_VP9:
            return .some(nil)
        case AV_CODEC_ID_H264:
            guard let data = par.pointee.extradata, par.pointee.extradata_size > 0,
                  let sar = H264AspectRatio.fromAVCC(Array(UnsafeBufferPointer(start: data,
                                                                               count: Int(par.pointee.extradata_size))))
            else { return nil }
            return .some(AVRational(num: sar.num, den: sar.den))
        default:
            return nil
        }
    }
}
