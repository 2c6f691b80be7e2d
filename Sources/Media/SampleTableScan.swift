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
    static func claimedSamples(io: UnsafeMutablePointer<AVIOContext>, wholeFile: Bool) -> (samples: Int, fileSize: Int)? {
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
        return (walker.samples, Int(size))
    }

    private struct Walker {
        let reader: (UInt64, Int) -> [UInt8]?
        var samples = 0
        var visited = 0
        /// End the top-level walk after the first `moof` (or 16 boxes): for remote items.
        var stopAfterMoov = false
        var topLevel = 0
        /// The handler of the track being walked (`vide`, `soun`, …).
        var handler = ""
        var trackSamples = 0
        var trackUniform = false
        /// The track's `stts`: one entry of duration 1, which makes FFmpeg index a sound track per chunk.
        var trackSingleTick = false

        static let containers: Set<String> = ["moov", "trak", "mdia", "minf", "stbl", "moof", "traf", "edts", "dinf"]

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
                guard size >= headerSize else { return }
                size = min(size, end - offset)
                let body = offset + headerSize
                switch type {
                case "trak":
                    let outer = (handler, trackSamples, trackUniform, trackSingleTick)
                    (handler, trackSamples, trackUniform, trackSingleTick) = ("", 0, false, false)
                    walk(from: body, to: offset + size, depth: depth + 1)
                    // FFmpeg's mov_build_index indexes per chunk only a sound track whose stts is one entry of
                    // duration 1 (old uncompressed audio); every other track gets an entry per claimed sample.
                    if !(handler == "soun" && trackUniform && trackSingleTick) { samples += trackSamples }
                    (handler, trackSamples, trackUniform, trackSingleTick) = outer
                case _ where Self.containers.contains(type):
                    walk(from: body, to: offset + size, depth: depth + 1)
                case "hdlr":
                    // The media handler sets the track's kind; a data handler (`alis`, `url `) does not.
                    if let b = read(body, 12) {
                        let type = String(decoding: b[8..<12], as: UTF8.self)
                        if type == "vide" || type == "soun" { handler = type }
                    }
                case "stsz":
                    if let b = read(body, 12) {
                        trackUniform = Self.be32(b, 4) != 0
                        trackSamples += Int(Self.be32(b, 8))
                    }
                case "stts":
                    if let b = read(body, 16) { trackSingleTick = Self.be32(b, 4) == 1 && Self.be32(b, 12) == 1 }
                case "stz2":
                    if let b = read(body, 12) { trackSamples += Int(Self.be32(b, 8)) }
                case "trun":
                    if let b = read(body, 8) { samples += Int(Self.be32(b, 4)) }
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
