import Foundation

/// A batch's record file: one JSON object per line, sorted by id, written whole and atomically (``AtomicFile``), so a
/// reader — or a rerun after a crash or SIGKILL — sees the previous complete file or the new one, never a torn line.
/// Reading skips lines that do not parse (a file edited by hand, a foreign tool) and counts them.
/// `thumbs` keeps its cards in one, `transcode` its rendition records.
public enum JSONLinesFile {
    /// The records in the file at `url`, and the count of lines that did not parse. A missing file has none.
    public static func read<Record: Decodable>(_ type: Record.Type, from url: URL) -> (records: [Record], skippedLines: Int) {
        guard let data = try? Data(contentsOf: url) else { return ([], 0) }
        let decoder = JSONDecoder()
        var records: [Record] = []
        var skipped = 0
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            if let record = try? decoder.decode(Record.self, from: Data(line)) {
                records.append(record)
            } else {
                skipped += 1
            }
        }
        return (records, skipped)
    }

    /// Writes `records` sorted by `id`, one per line, keys sorted, atomically.
    /// - Throws: ``MediaError`` `io` naming the file.
    public static func write<Record: Encodable>(_ records: [Record], id: (Record) -> String, to url: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes: [UInt8] = []
        for record in records.sorted(by: { id($0) < id($1) }) {
            bytes += try Array(encoder.encode(record))
            bytes.append(UInt8(ascii: "\n"))
        }
        try AtomicFile.write(bytes, to: url.path)
    }
}
