internal import CFFmpeg
import Foundation

/// Where a video stream's pictures really end, found by reading packets (demuxing, no decoding), and what the
/// container's header claims: the two differ for a header that lies (a fragmented MP4 whose `mvhd` duration is all
/// ones, "unknown", read as 143,165 s), for an MPEG-TS cut midway (its duration is an estimate from the bit rate),
/// and for a WebM without a duration.
public struct VideoEnd: Sendable, Equatable, Codable {
    /// The longest a file of `bytes` bytes can play: at 250 bytes a second (2 kb/s, under what any video codec
    /// spends on a still picture with its container's per-frame tables). A claim beyond it is absurd: the
    /// duration field is "unknown" (all ones) or corrupt.
    public static func maxPlausibleSeconds(bytes: Int) -> Double { Double(max(bytes, 0)) / 250 }

    /// How the end was found.
    public enum Method: String, Sendable, Equatable, Codable {
        /// Read from the last keyframe the demuxer's index holds to the end of the file (a non-fragmented or a
        /// local fragmented MP4, Matroska with cues, AVI with an index): one group of pictures.
        case index
        /// Read from a byte position near the end of the file to its end (MPEG-TS, FLV, Matroska without cues…).
        case tail
        /// Read from the start (a small file, or a container that can do neither of the above).
        case whole
    }

    /// When the last picture starts (the largest presentation time of a video packet), in seconds from the item's
    /// start (``MediaInfo/startTime``).
    public var lastStart: Double
    /// When the last picture ends (the largest presentation time plus duration of a video packet), in seconds from
    /// the item's start: the end of what decodes.
    public var end: Double
    /// Whether the read reached the end of the file. When false the byte bound stopped it first: ``end`` is only a
    /// lower bound (the pictures go on at least that far).
    public var isComplete: Bool
    /// How it was found.
    public var method: Method
    /// Packet bytes read to find it.
    public var bytesRead: Int
    /// The file's size in bytes, when the I/O layer knows it.
    public var fileSize: Int?
    /// When the first keyframe in decode order starts (its presentation time), in seconds from the item's start:
    /// where decoding from the start gives its first picture. The pictures before it in decode order refer to
    /// pictures before the cut (a broadcast capture starts mid-GOP) and the decoder drops them, so a video stream
    /// whose header says it starts at 0.7 s may show nothing before 1.3 s. Nil when no keyframe was found in the
    /// first ``MediaFile/videoEndByteBound``/4 bytes of packets.
    public var firstKeyStart: Double? = nil
}

extension MediaFile {
    /// The file's size in bytes, when the I/O layer knows it (a local file, a response with a length).
    /// The corresponding FFmpeg function is `avio_size`.
    public var byteSize: Int? {
        guard let pb = context.pointee.pb else { return nil }
        let size = avio_size(pb)
        return size > 0 ? Int(size) : nil
    }

    /// Packet bytes ``videoEnd(stream:)`` reads at most: 32 MiB from a local file, 8 MiB over the network.
    var videoEndByteBound: Int { item.hasPrefix("http:") || item.hasPrefix("https:") ? 8 << 20 : 32 << 20 }

    /// Finds where the pictures of video stream `index` really end by reading packets, without decoding; nil when
    /// the input cannot seek (nothing is read then) or no video packet with a time was found.
    ///
    /// The cheapest read that is correct, in this order, each bounded by ``videoEndByteBound`` bytes of packets:
    /// 1. the demuxer's index reaches within the bound of the file's end (every MP4 on a seekable input, whose
    ///    fragments FFmpeg indexes while opening; Matroska with cues; AVI with `idx1`): seek to the 32nd last
    ///    picture whose bytes are in the file when the index holds every picture (MP4, AVI), else to its last
    ///    keyframe (Matroska cues), and read to the end — a few dozen pictures, or one group of pictures;
    /// 2. the container can seek by bytes (MPEG-TS, PS, FLV, Matroska): read the last 1 MiB, else 4, else 16 MiB —
    ///    as ffprobe estimates a TS's duration from its last timestamps;
    /// 3. read from the start.
    /// Before these, the first keyframe from where opening left the demuxer (``VideoEnd/firstKeyStart``), within a
    /// quarter of the bound: one group of pictures at most.
    /// A read that meets the bound before the end of the file gives an incomplete result (``VideoEnd/isComplete``
    /// false): a genuinely long file is never read whole to find its end (at most three bounds' worth of packets
    /// in all, when neither the index nor the last 16 MiB hold a picture). Over HTTP each seek is one range request,
    /// one or two in all besides the second open's.
    ///
    /// Reads on a second demuxer of the same source (opened again with this file's options, its header only), so
    /// this file is left as it was: a local file or bytes in memory cost another header read, an HTTP item another
    /// connection. Its other streams are discarded (`AVDISCARD_ALL`: an MP4 skips their bytes).
    /// The corresponding FFmpeg functions are `avformat_index_get_entry`, `av_seek_frame` and `av_read_frame`.
    /// - Throws: ``MediaError`` from opening the source again (`cancelled`, `timedOut`, `io`…); a read error ends
    ///   the read (an incomplete result).
    public func videoEnd(stream index: Int) throws -> VideoEnd? {
        // A demuxer of its own, so this file stays as opened (and a pass from the start reads no further).
        let twin = try twin(discardingAllBut: index)
        guard index < Int(twin.context.pointee.nb_streams) else { return nil }
        // The start first, where opening left the demuxer: its first keyframe.
        let firstKey = try twin.readFirstKey(stream: index, bound: videoEndByteBound / 4, origin: info.startTime)
        var found = try twin.readVideoEnd(stream: index, origin: info.startTime, moved: firstKey.bytesRead > 0)
        found?.firstKeyStart = firstKey.time
        return found
    }

    /// A second demuxer of the same source, opened with this file's options (its header only) and reading only
    /// stream `index` (the others `AVDISCARD_ALL`: an MP4 skips their bytes), at the start; this file is left as it is.
    /// - Throws: ``MediaError`` from opening the source again.
    package func twin(discardingAllBut index: Int) throws -> MediaFile {
        var twinOptions = options
        twinOptions.streamInfo = .header
        let twin = try MediaFile(source: source, item: item, options: twinOptions, cancellation: interrupt.token)
        for i in 0..<Int(twin.context.pointee.nb_streams) where i != index {
            twin.stream(at: i).pointee.discard = AVDISCARD_ALL
        }
        return twin
    }

    /// The next packet, for reading where the video ends: nil for a read error, which ends the reading (what was read
    /// stands); cancellation and time-outs are thrown.
    private func readTolerating(into packet: UnsafeMutablePointer<AVPacket>) throws -> PacketRead? {
        do {
            return try readPacket(into: packet)
        } catch let error as MediaError where error.kind != .cancelled && error.kind != .timedOut {
            return nil
        }
    }

    /// Reads packets from where the demuxer is until the first keyframe of video stream `index` with a time, or
    /// until `bound` bytes of packets were read: that keyframe's presentation time in seconds from `origin`.
    private func readFirstKey(stream index: Int, bound: Int, origin: Double) throws -> (time: Double?, bytesRead: Int) {
        let st = stream(at: index)
        let tb = st.pointee.time_base
        let seconds = Double(tb.num) / Double(max(tb.den, 1))
        guard seconds > 0, let packet = Packet() else { return (nil, 0) }
        var bytes = 0
        while bytes <= bound {
            guard let step = try readTolerating(into: packet.raw), case .packet = step else { break }
            let p = packet.raw.pointee
            bytes += Int(max(p.size, 0))
            defer { av_packet_unref(packet.raw) }
            guard Int(p.stream_index) == index, (p.flags & vf_pkt_flag_discard()) == 0,
                  (p.flags & vf_pkt_flag_key()) != 0 else { continue }
            let time = p.pts != vf_nopts_value() ? p.pts : p.dts
            guard time != vf_nopts_value() else { continue }
            return (max(0, Double(time) * seconds - origin), max(bytes, 1))
        }
        return (nil, bytes)
    }

    /// ``videoEnd(stream:)`` on this demuxer, in seconds from `origin` (the caller's ``MediaInfo/startTime``).
    /// `moved`: packets were read already (the start is behind the demuxer).
    private func readVideoEnd(stream index: Int, origin: Double, moved: Bool) throws -> VideoEnd? {
        let ctx = context
        guard let pb = ctx.pointee.pb, (pb.pointee.seekable & vf_avio_seekable_normal()) != 0 else { return nil }
        let size = avio_size(pb)
        let fileSize: Int? = size > 0 ? Int(size) : nil
        let bound = videoEndByteBound
        let st = stream(at: index)
        var found: VideoEnd? = nil
        // Whether a read or a seek moved the demuxer from where opening left it (its first packet).
        var moved = moved

        // 1. The index's last entries in the file, when they are near the end.
        if let entry = indexedReadStart(st, fileSize: size), size <= 0 || size - entry.pos <= Int64(bound) {
            dropPendingPackets()
            moved = true
            let flags = vf_seek_flag_backward() | (entry.anyFrame ? vf_seek_flag_any() : 0)
            if av_seek_frame(ctx, Int32(index), entry.timestamp, flags) >= 0 {
                found = try readToEnd(stream: index, bound: bound, method: .index, fileSize: fileSize, origin: origin)
            }
        }
        // 2. The file's last megabytes.
        let byteSeek = (ctx.pointee.iformat.pointee.flags & vf_fmt_no_byte_seek()) == 0
        if found?.isComplete != true, byteSeek, size > 0 {
            var read = 0
            for window in [1 << 20, 4 << 20, 16 << 20] where read + window <= bound {
                let position = max(0, size - Int64(window))
                dropPendingPackets()
                moved = true
                guard av_seek_frame(ctx, -1, position, vf_seek_flag_byte()) >= 0 else { break }
                let tail = try readToEnd(stream: index, bound: bound - read, method: position == 0 ? .whole : .tail,
                                         fileSize: fileSize, origin: origin)
                read += tail?.bytesRead ?? window
                if let tail, tail.isComplete {
                    found = tail
                    break
                }
                if position == 0 { break }
            }
        }
        // 3. From the start, when that can reach the end (or nothing else was found: then a lower bound).
        if found?.isComplete != true, found == nil || (size > 0 && size <= Int64(bound)) {
            if moved { try? rewindToStart() }
            if let whole = try readToEnd(stream: index, bound: bound, method: .whole, fileSize: fileSize, origin: origin),
               whole.isComplete || whole.end > (found?.end ?? -1) {
                found = whole
            }
        }
        return found
    }

    /// Where to read the end of `st` from by its index: 32 entries before the last one whose bytes are all in the
    /// file (an `mdat` may claim more than the file holds) when the index holds every picture (MP4, AVI: the
    /// largest presentation time is among the last few in decode order, whatever the reordering), else its last
    /// keyframe (Matroska cues). Looks at most 100,000 entries back.
    private func indexedReadStart(_ st: UnsafeMutablePointer<AVStream>, fileSize: Int64)
        -> (timestamp: Int64, pos: Int64, anyFrame: Bool)? {
        let count = Int(avformat_index_get_entries_count(st))
        func entry(_ i: Int) -> AVIndexEntry? {
            guard i >= 0, i < count else { return nil }
            return avformat_index_get_entry(st, Int32(i))?.pointee
        }
        var last = count - 1
        while last >= max(0, count - 100_000) {
            if let e = entry(last), e.timestamp != vf_nopts_value(), fileSize <= 0 || e.pos + Int64(e.size) <= fileSize {
                break
            }
            last -= 1
        }
        guard last >= 0, last >= count - 100_000 else { return nil }
        let isKey = { (e: AVIndexEntry) in (e.flags & vf_index_keyframe()) != 0 }
        let everyPicture = (max(0, last - 40)...last).contains { entry($0).map { !isKey($0) } ?? false }
        if everyPicture, let e = entry(max(0, last - 32)), e.timestamp != vf_nopts_value() {
            return (e.timestamp, e.pos, true)
        }
        var i = last
        while i >= max(0, count - 100_000) {
            if let e = entry(i), isKey(e), e.timestamp != vf_nopts_value() { return (e.timestamp, e.pos, false) }
            i -= 1
        }
        return nil
    }

    /// Reads packets from where the demuxer is to the end of the file or until `bound` bytes of packets were read;
    /// nil when no packet of stream `index` had a time.
    private func readToEnd(stream index: Int, bound: Int, method: VideoEnd.Method, fileSize: Int?,
                           origin start: Double) throws -> VideoEnd? {
        let st = stream(at: index)
        let tb = st.pointee.time_base
        let seconds = Double(tb.num) / Double(max(tb.den, 1))
        guard seconds > 0, let packet = Packet() else { return nil }
        // A packet without a duration lasts one frame at the stream's rate.
        let rate = st.pointee.avg_frame_rate.num > 0 && st.pointee.avg_frame_rate.den > 0
            ? st.pointee.avg_frame_rate : st.pointee.r_frame_rate
        let nominal: Int64 = rate.num > 0 && rate.den > 0
            ? max(1, Int64((Double(rate.den) / Double(rate.num) / seconds).rounded())) : 0
        var last: Int64? = nil, end: Int64? = nil
        var bytes = 0
        var complete = false
        while bytes <= bound {
            guard let step = try readTolerating(into: packet.raw) else { break }
            if case .endOfFile = step {
                complete = true
                break
            }
            let p = packet.raw.pointee
            bytes += Int(max(p.size, 0))
            defer { av_packet_unref(packet.raw) }
            guard Int(p.stream_index) == index, (p.flags & vf_pkt_flag_discard()) == 0 else { continue }
            let time = p.pts != vf_nopts_value() ? p.pts : p.dts
            guard time != vf_nopts_value() else { continue }
            let stop = time.addingReportingOverflow(p.duration > 0 ? p.duration : nominal)
            guard !stop.overflow else { continue }
            last = max(last ?? time, time)
            end = max(end ?? stop.partialValue, stop.partialValue)
        }
        guard let last, let end else { return nil }
        return VideoEnd(lastStart: max(0, Double(last) * seconds - start), end: max(0, Double(end) * seconds - start),
                        isComplete: complete, method: method, bytesRead: bytes, fileSize: fileSize)
    }
}
