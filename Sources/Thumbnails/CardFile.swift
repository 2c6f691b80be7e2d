import Foundation
import Media

/// Reads and writes a `cards.jsonl` file: one JSON ``ThumbnailCard`` per line, sorted by `public_id`.
///
/// Written whole and atomically (``AtomicFile``: a temporary file, then a rename), so a reader — or a rerun after a
/// crash or SIGKILL — sees either the previous complete file or the new complete file, never a torn line. Reading
/// skips any line that does not parse (a file edited by hand, a foreign tool), reporting how many it skipped.
public enum CardFile {
    /// The cards in the file at `url`, and the count of lines that did not parse. A missing file has no cards.
    public static func read(_ url: URL) -> (cards: [ThumbnailCard], skippedLines: Int) {
        guard let data = try? Data(contentsOf: url) else { return ([], 0) }
        let decoder = JSONDecoder()
        var cards: [ThumbnailCard] = []
        var skipped = 0
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            if let card = try? decoder.decode(ThumbnailCard.self, from: Data(line)) {
                cards.append(card)
            } else {
                skipped += 1
            }
        }
        return (cards, skipped)
    }

    /// Writes `cards`, sorted by `public_id`, one per line, atomically.
    /// - Throws: ``MediaError`` `io` naming the file.
    public static func write(_ cards: [ThumbnailCard], to url: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes: [UInt8] = []
        for card in cards.sorted(by: { $0.publicID < $1.publicID }) {
            bytes += try Array(encoder.encode(card))
            bytes.append(UInt8(ascii: "\n"))
        }
        try AtomicFile.write(bytes, to: url.path)
    }

    /// Joins every per-shard card file (`cards-<i>-of-<n>.jsonl`) in `folder` into `cards.jsonl`; a `public_id`
    /// found twice keeps the card of the later file in name order. Returns the number of cards written.
    /// - Throws: ``MediaError`` `io`, or `fileNotFound` when there is no shard file.
    @discardableResult
    public static func merge(in folder: URL) throws -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let shardFiles = names.filter { $0.hasPrefix("cards-") && $0.hasSuffix(".jsonl") && $0.contains("-of-") }
            .sorted()
        guard !shardFiles.isEmpty else {
            throw MediaError(.fileNotFound, operation: "merge", item: folder.path,
                             message: "no cards-<i>-of-<n>.jsonl files")
        }
        var byID: [String: ThumbnailCard] = [:]
        for name in shardFiles {
            for card in read(folder.appendingPathComponent(name)).cards { byID[card.publicID] = card }
        }
        try write(Array(byID.values), to: folder.appendingPathComponent("cards.jsonl"))
        return byID.count
    }
}
