package import CFFmpeg
import Foundation

/// A muxer (`AVFormatContext` for output) over libavformat, in one of two shapes:
///
/// - ``Target/file(_:format:options:)``: a whole file written through FFmpeg's file protocol, e.g. an MP4 with
///   `movflags=+faststart` (the index moved to the front in the trailer, so playback starts before the download ends).
///   The caller writes to a temporary name and renames it when ``finish()`` returned.
/// - ``Target/fragments``: fragmented MP4 (CMAF) into memory, cut by the caller: ``cutFragment()`` ends the current
///   fragment and returns its bytes — the first time prefixed by the initialisation segment (`ftyp` + `moov`), which
///   ``splitInitialization(_:)`` separates. The same options as the ffmpeg CLI's HLS muxer gives its fMP4 segments
///   (`movflags=frag_custom+dash+delay_moov`).
///
/// Output is bit-exact (no creation time, no library version), so the same packets give the same bytes anywhere.
package final class MediaWriter {
    package enum Target {
        case file(String, format: String, options: [String: String])
        case fragments(options: [String: String])
    }

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let item: String
    private let fragmented: Bool
    private var headerWritten = false
    private var finished = false
    /// Per output stream: the time base packets are given in (the encoder's).
    private var sourceTimeBases: [AVRational] = []
    /// Each stream's last decode time written (in its own time base), to keep them rising.
    private var lastDTS: [Int: Int64] = [:]
    private var options: [String: String]

    package init(_ target: Target, item: String) throws {
        self.item = item
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let result: Int32
        switch target {
        case .file(let path, let format, let options):
            fragmented = false
            self.options = options
            result = avformat_alloc_output_context2(&ctx, nil, format, path)
        case .fragments(let options):
            fragmented = true
            self.options = options
            result = avformat_alloc_output_context2(&ctx, nil, "mp4", nil)
        }
        guard result >= 0, let ctx else {
            throw MediaError.ffmpeg(result < 0 ? result : vf_averror(ENOMEM), operation: "open muxer", item: item)
        }
        ctx.pointee.flags |= AVFMT_FLAG_BITEXACT
        context = ctx
    }

    deinit {
        guard let ctx = context else { return }
        if fragmented {
            if let pb = ctx.pointee.pb {
                var buffer: UnsafeMutablePointer<UInt8>? = nil
                _ = avio_close_dyn_buf(pb, &buffer)
                av_free(buffer)
            }
        } else {
            avio_closep(&ctx.pointee.pb)
        }
        avformat_free_context(ctx)
    }

    /// Whether the container wants codec headers out of band (MP4 does).
    package var wantsGlobalHeader: Bool {
        guard let format = context?.pointee.oformat else { return true }
        return (format.pointee.flags & vf_fmt_globalheader()) != 0
    }

    /// Adds a stream for the output of `encoder` (its `AVCodecContext`); returns the stream index.
    package func addStream(from encoder: UnsafeMutablePointer<AVCodecContext>) throws -> Int {
        guard let ctx = context, let stream = avformat_new_stream(ctx, nil) else {
            throw MediaError(.limitExceeded, operation: "open muxer", item: item, message: "out of memory")
        }
        let copied = avcodec_parameters_from_context(stream.pointee.codecpar, encoder)
        guard copied >= 0 else { throw MediaError.ffmpeg(copied, operation: "open muxer", item: item) }
        stream.pointee.time_base = encoder.pointee.time_base
        if encoder.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
            stream.pointee.avg_frame_rate = encoder.pointee.framerate
            stream.pointee.sample_aspect_ratio = encoder.pointee.sample_aspect_ratio
        }
        sourceTimeBases.append(encoder.pointee.time_base)
        return Int(stream.pointee.index)
    }

    /// Opens the output and writes the container header (or, fragmented, prepares it for the first cut).
    package func begin() throws {
        guard let ctx = context else { return }
        if fragmented {
            let opened = avio_open_dyn_buf(&ctx.pointee.pb)
            guard opened >= 0 else { throw MediaError.ffmpeg(opened, operation: "open muxer", item: item) }
        } else if (ctx.pointee.oformat.pointee.flags & vf_fmt_nofile()) == 0 {
            var whitelist: OpaquePointer? = nil
            av_dict_set(&whitelist, "protocol_whitelist", "file", 0)
            let opened = avio_open2(&ctx.pointee.pb, ctx.pointee.url, vf_avio_flag_write(), nil, &whitelist)
            av_dict_free(&whitelist)
            guard opened >= 0 else { throw MediaError.ffmpeg(opened, operation: "write", item: item) }
        }
        var dict: OpaquePointer? = nil
        for (key, value) in options.sorted(by: { $0.key < $1.key }) { av_dict_set(&dict, key, value, 0) }
        if !fragmented { av_dict_set(&dict, "protocol_whitelist", "file", 0) }
        defer { av_dict_free(&dict) }
        let written = avformat_write_header(ctx, &dict)
        guard written >= 0 else { throw MediaError.ffmpeg(written, operation: "write header", item: item) }
        headerWritten = true
    }

    /// Writes one packet of output stream `stream`, rescaling its timestamps from the encoder's time base. The
    /// packet's data is taken (the packet is left empty).
    package func write(_ packet: Packet, stream: Int, interleaved: Bool) throws {
        guard let ctx = context else { return }
        let st = ctx.pointee.streams[stream]!
        packet.raw.pointee.stream_index = Int32(stream)
        av_packet_rescale_ts(packet.raw, sourceTimeBases[stream], st.pointee.time_base)
        // Packets of several encoder sessions in a row (a batch's MP4 takes every segment's) may start a session a
        // little before the last one's decode times: moved up a tick, as far as their presentation time allows.
        let dts = packet.raw.pointee.dts
        if dts != vf_nopts_value(), let last = lastDTS[stream], dts <= last {
            let pts = packet.raw.pointee.pts
            if pts == vf_nopts_value() || last < pts { packet.raw.pointee.dts = last + 1 }
        }
        if packet.raw.pointee.dts != vf_nopts_value() { lastDTS[stream] = packet.raw.pointee.dts }
        let result = interleaved ? av_interleaved_write_frame(ctx, packet.raw) : av_write_frame(ctx, packet.raw)
        guard result >= 0 else { throw MediaError.ffmpeg(result, operation: "write", item: item) }
    }

    /// Fragmented: ends the current fragment and returns every byte written since the last cut.
    package func cutFragment() throws -> [UInt8] {
        guard fragmented, let ctx = context else { return [] }
        let flushed = av_write_frame(ctx, nil)
        guard flushed >= 0 else { throw MediaError.ffmpeg(flushed, operation: "write", item: item) }
        return try takeBytes(reopen: true)
    }

    /// Writes the trailer; for a file, closes it. Fragmented: returns the bytes of the last fragment, if any.
    @discardableResult
    package func finish() throws -> [UInt8] {
        guard let ctx = context, headerWritten, !finished else { return [] }
        finished = true
        let trailer = av_write_trailer(ctx)
        guard trailer >= 0 else { throw MediaError.ffmpeg(trailer, operation: "write trailer", item: item) }
        if fragmented { return try takeBytes(reopen: false) }
        let closed = avio_closep(&ctx.pointee.pb)
        guard closed >= 0 else { throw MediaError.ffmpeg(closed, operation: "write", item: item) }
        return []
    }

    private func takeBytes(reopen: Bool) throws -> [UInt8] {
        guard let ctx = context, let pb = ctx.pointee.pb else { return [] }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        let size = avio_close_dyn_buf(pb, &buffer)
        ctx.pointee.pb = nil
        defer { av_free(buffer) }
        let bytes = buffer.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(size, 0)))) } ?? []
        if reopen {
            let opened = avio_open_dyn_buf(&ctx.pointee.pb)
            guard opened >= 0 else { throw MediaError.ffmpeg(opened, operation: "write", item: item) }
        }
        return bytes
    }

    /// Splits the bytes of a first fragment into the initialisation segment (every top-level box before the first
    /// `styp`, `sidx` or `moof`) and the media segment (the rest).
    package static func splitInitialization(_ bytes: [UInt8]) -> (initialization: [UInt8], media: [UInt8]) {
        var offset = 0
        while offset + 8 <= bytes.count {
            let size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                | Int(bytes[offset + 3])
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            if type == "styp" || type == "sidx" || type == "moof" { break }
            guard size >= 8, offset + size <= bytes.count else { break }
            offset += size
        }
        return (Array(bytes[..<offset]), Array(bytes[offset...]))
    }
}
