internal import CFFmpeg
import Foundation

/// Reads the box tree of an MP4/MOV file before FFmpeg's demuxer does, to refuse a sample-table bomb: a file
/// of a few hundred bytes whose `stsz` or `trun` boxes claim tens of millions of samples, for each of which the
/// demuxer writes a 24-byte index entry while opening (2–3 GB, touched, found by a reliability review). A real file
/// stores at least a byte per sample, so a file claiming more samples than it has bytes is refused unopened.
///
/// Counted: `stsz`/`stz2` sample counts of every track but a sound track of uniform sample size whose `stts` is one
/// entry of duration 1 (FFmpeg indexes that old uncompressed-audio layout per chunk, and it counts single PCM
/// samples there), and every `trun`'s sample count. Only box headers and those counts are read; the walk visits at most 100,000 boxes and reads box
/// sizes as FFmpeg does (a box larger than what is left of its parent is cut to it). Fuzzing found mutated bombs
/// that a stricter walk stopped short of; `Fixtures/fuzz/slow-index-*` keep them.
enum SampleTableScan {
    /// The samples the tables of the file behind `io` claim, per the rule above, and the file's size; nil when the
    /// size is unknown or the input cannot seek. Reads through the item's own I/O context (a local file, bytes in
    /// memory or an HTTP(S) body with range requests) and seeks it back to the start afterwards.
    ///
    /// `wholeFile` walks every top-level box (every `moof` of a fragmented file); without it (a remote item) the walk
    /// ends after the first `moof` or 16 top-level boxes, about as far as the demuxer's own header read goes, so it
    /// costs few requests. A later fragment of a remote file is bounded by `av_max_alloc` alone.
    static func claimedSamples(io: UnsafeMutablePointer<AVIOContext>, wholeFile: Bool)
        -> (samples: Int, fileSize: Int, compressed: Bool)? {
        let size = avio_size(io)
        guard size > 0, io.pointee.seekable != 0 else { return nil }
        var walker = Walker { offset, count in
            guard avio_seek(io, Int64(offset), SEEK_SET) >= 0 else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            let read = bytes.withUnsafeMutableBufferPointer { avio_read(io, $0.baseAddress, Int32(count)) }
            return read == Int32(count) ? bytes : nil
        }
        walker.stopAfterMoov = !wholeFile
        walker.walk(from: 0, to: UInt64(size), depth: 0)
        _ = avio_seek(io, 0, SEEK_SET)
        return (walker.samples, Int(size), walker.compressed)
    }

    private struct Walker {
        let reader: (UInt64, Int) -> [UInt8]?
        /// Index entries the demuxer would make, summed over every track and fragment.
        var samples = 0
        /// A compressed movie header (`cmov`) was seen: its tables cannot be read without inflating it.
        var compressed = false
        var visited = 0
        /// End the top-level walk after the first `moof` (or 16 boxes): for remote items.
        var stopAfterMoov = false
        var topLevel = 0
        /// The track being walked.
        var track = Track()

        struct Track {
            /// The media handler (`vide`, `soun`, …), as the last `hdlr` set it.
            var handler = ""
            var samples = 0
            var uniform = false
            /// `stts` is one entry of duration 1, which makes FFmpeg index a sound track per chunk.
            var singleTick = false
            var chunks = 0
            /// `stsc` runs: first chunk (1-based) and samples per chunk.
            var runs: [(first: Int, perChunk: Int)] = []

            /// The index entries FFmpeg's mov_build_index makes for this track. On the per-chunk path (a sound
            /// track of uniform sample size whose stts is one tick) it makes up to one entry per 160 samples of each
            /// chunk (GSM; 1024 for PCM); otherwise one per claimed sample.
            var entries: Int {
                guard handler == "soun", uniform, singleTick else { return samples }
                var total = 0
                for (i, run) in runs.enumerated() {
                    let last = i + 1 < runs.count ? runs[i + 1].first - 1 : chunks
                    let count = max(0, last - run.first + 1)
                    total = total.addingReportingOverflow(count.multipliedReportingOverflow(
                        by: (run.perChunk + 159) / 160).partialValue).partialValue
                    if total < 0 { return Int.max }
                }
                return total
            }
        }

        /// The boxes FFmpeg's mov_read_default descends into (its parse table), wherever they stand: its parsing is
        /// by box type, not by position, so a sample table inside `udta` still counts.
        static let containers: Set<String> = [
            "moov", "hoov", "trak", "mdia", "minf", "stbl", "moof", "traf", "edts", "dinf", "udta", "tref", "mvex",
            "sinf", "schi", "wave",
        ]

        init(reader: @escaping (UInt64, Int) -> [UInt8]?) {
            self.reader = reader
        }

        func read(_ offset: UInt64, _ count: Int) -> [UInt8]? { reader(offset, count) }

        static func be32(_ b: [UInt8], _ at: Int) -> UInt64 {
            (UInt64(b[at]) << 24) | (UInt64(b[at + 1]) << 16) | (UInt64(b[at + 2]) << 8) | UInt64(b[at + 3])
        }

        mutating func walk(from start: UInt64, to end: UInt64, depth: Int) {
            var offset = start
            while offset + 8 <= end, visited < 100_000, depth < 16 {
                visited += 1
                guard let head = read(offset, 8) else { return }
                var size = Self.be32(head, 0)
                let type = String(decoding: head[4..<8], as: UTF8.self)
                var headerSize: UInt64 = 8
                if size == 1 {
                    guard let large = read(offset + 8, 8) else { return }
                    size = (Self.be32(large, 0) << 32) | Self.be32(large, 4)
                    headerSize = 16
                } else if size == 0 {
                    size = end - offset
                }
                // As FFmpeg's mov_read_default: a box smaller than its header ends its parent, one larger than what
                // is left of its parent is cut to it (a mutated size must not hide the boxes the demuxer reads).
                size = min(size, end - offset)
                // (Checked after the cut: a 64-bit size header with less than its 16 bytes left ends the parent too;
                // found by fuzzing as an arithmetic overflow, Fixtures/fuzz/crash-scan-overflow-eedae890.)
                guard size >= headerSize else { return }
                let body = offset + headerSize
                let bodySize = Int(clamping: size - headerSize)
                switch type {
                case "trak":
                    let outer = track
                    track = Track()
                    walk(from: body, to: offset + size, depth: depth + 1)
                    samples = samples.addingReportingOverflow(track.entries).partialValue
                    if samples < 0 { samples = Int.max }
                    track = outer
                case "meta":
                    // mov_read_meta: the boxes start where `hdlr` is found, after a version/flags field or not.
                    if let b = read(body, min(bodySize, 64)) {
                        var at = 4
                        while at + 4 <= b.count, String(decoding: b[at..<(at + 4)], as: UTF8.self) != "hdlr" { at += 4 }
                        if at + 4 <= b.count { walk(from: body + UInt64(at - 4), to: offset + size, depth: depth + 1) }
                    }
                case "cmov":
                    compressed = true
                case _ where Self.containers.contains(type):
                    walk(from: body, to: offset + size, depth: depth + 1)
                case "hdlr":
                    // The media handler sets the track's kind; a data handler (`alis`, `url `) does not.
                    if let b = read(body, 12) {
                        let kind = String(decoding: b[8..<12], as: UTF8.self)
                        if kind == "vide" || kind == "soun" { track.handler = kind }
                    }
                case "stsz":
                    if let b = read(body, 12) {
                        track.uniform = Self.be32(b, 4) != 0
                        track.samples += Int(Self.be32(b, 8))
                    }
                case "stz2":
                    if let b = read(body, 12) { track.samples += Int(Self.be32(b, 8)) }
                case "stts":
                    if let b = read(body, 16) { track.singleTick = Self.be32(b, 4) == 1 && Self.be32(b, 12) == 1 }
                case "stco", "co64":
                    if let b = read(body, 8) { track.chunks = Int(Self.be32(b, 4)) }
                case "stsc":
                    // Entries are in the file (12 bytes each), so reading them costs no more than the box.
                    if let b = read(body, 8) {
                        let count = min(Int(Self.be32(b, 4)), (bodySize - 8) / 12, 1_000_000)
                        if count > 0, let table = read(body + 8, count * 12) {
                            track.runs = (0..<count).map {
                                (Int(Self.be32(table, $0 * 12)), Int(Self.be32(table, $0 * 12 + 4)))
                            }
                        }
                    }
                case "trun":
                    if let b = read(body, 8) { samples = samples.addingReportingOverflow(Int(Self.be32(b, 4))).partialValue }
                default:
                    break
                }
                offset += size
                // The demuxer's header read goes as far as the first fragment: so does a remote walk.
                if depth == 0 { topLevel += 1 }
                if depth == 0, stopAfterMoov, type == "moof" || topLevel >= 16 { return }
            }
        }
    }
}
