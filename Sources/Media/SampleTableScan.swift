import Foundation

/// Reads the box tree of a local MP4/MOV file before FFmpeg's demuxer does, to refuse a sample-table bomb: a file
/// of a few hundred bytes whose `stsz` or `trun` boxes claim tens of millions of samples, for each of which the
/// demuxer writes a 24-byte index entry while opening (2–3 GB, touched, found by a reliability review). A real file
/// stores at least a byte per sample, so a file claiming more samples than it has bytes is refused unopened.
///
/// Counted: `stsz`/`stz2` sample counts of every track that is not sound (an audio track of uniform sample size is
/// indexed per chunk, not per sample, and old QuickTime audio counts single PCM samples there), and every `trun`'s
/// sample count. Only box headers and those counts are read; the walk visits at most 100,000 boxes and reads box
/// sizes as FFmpeg does (a box larger than what is left of its parent is cut to it). Fuzzing found mutated bombs
/// that a stricter walk stopped short of; `Fixtures/fuzz/slow-index-*` keep them.
enum SampleTableScan {
    /// The samples the file's tables claim, per the rule above, or nil when the file cannot be read as boxes.
    static func claimedSamples(path: String) -> (samples: Int, fileSize: Int)? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let end = try? handle.seekToEnd(), end > 0 else { return nil }
        var walker = Walker { offset, count in
            guard (try? handle.seek(toOffset: offset)) != nil,
                  let data = try? handle.read(upToCount: count), data.count == count else { return nil }
            return Array(data)
        }
        walker.walk(from: 0, to: end, depth: 0)
        return (walker.samples, Int(clamping: end))
    }

    /// The same for media in memory.
    static func claimedSamples(data: Data) -> (samples: Int, fileSize: Int) {
        var walker = Walker { offset, count in
            guard offset <= UInt64(data.count), count <= data.count - Int(offset) else { return nil }
            let start = data.startIndex + Int(offset)
            return Array(data[start..<(start + count)])
        }
        walker.walk(from: 0, to: UInt64(data.count), depth: 0)
        return (walker.samples, data.count)
    }

    private struct Walker {
        let reader: (UInt64, Int) -> [UInt8]?
        var samples = 0
        var visited = 0
        /// The handler of the track being walked (`vide`, `soun`, …).
        var handler = ""
        var trackSamples = 0
        var trackUniform = false

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
                    let outer = (handler, trackSamples, trackUniform)
                    (handler, trackSamples, trackUniform) = ("", 0, false)
                    walk(from: body, to: offset + size, depth: depth + 1)
                    // A sound track of uniform sample size is indexed per chunk: its count is not per entry.
                    if !(handler == "soun" && trackUniform) { samples += trackSamples }
                    (handler, trackSamples, trackUniform) = outer
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
                case "stz2":
                    if let b = read(body, 12) { trackSamples += Int(Self.be32(b, 8)) }
                case "trun":
                    if let b = read(body, 8) { samples += Int(Self.be32(b, 4)) }
                default:
                    break
                }
                offset += size
            }
        }
    }
}
