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
    ///
    /// The shard files must be one complete set: all of the same count `n`, every index `0..<n` present once.
    /// Files of two shardings (`-of-2` beside `-of-3`, left by an earlier run), an index out of range, or a missing
    /// shard would make a card file that is not the feed, so nothing is written then.
    /// - Throws: ``MediaError`` `io`, `fileNotFound` when there is no shard file, `invalidArgument` for a set that
    ///   is mixed, impossible or incomplete.
    @discardableResult
    public static func merge(in folder: URL) throws -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let candidates = names.filter { $0.hasPrefix("cards-") && $0.hasSuffix(".jsonl") && $0.contains("-of-") }
            .sorted()
        guard !candidates.isEmpty else {
            throw MediaError(.fileNotFound, operation: "merge", item: folder.path,
                             message: "no cards-<i>-of-<n>.jsonl files")
        }
        var shards: [(name: String, index: Int, count: Int)] = []
        for name in candidates {
            let fields = name.dropFirst("cards-".count).dropLast(".jsonl".count).components(separatedBy: "-of-")
            guard fields.count == 2, let index = Int(fields[0]), let count = Int(fields[1]),
                  count >= 1, index >= 0, index < count else {
                throw MediaError(.invalidArgument, operation: "merge", item: folder.appendingPathComponent(name).path,
                                 message: "not the card file of a possible shard i of n (0 <= i < n)")
            }
            shards.append((name, index, count))
        }
        let counts = Set(shards.map(\.count)).sorted()
        guard counts.count == 1, let count = counts.first else {
            throw MediaError(.invalidArgument, operation: "merge", item: folder.path, message: """
                card files of different shardings (\(counts.map { "-of-\($0)" }.joined(separator: ", "))); remove \
                the files of the old sharding first
                """)
        }
        let missing = Set(0..<count).subtracting(shards.map(\.index)).sorted()
        guard missing.isEmpty else {
            throw MediaError(.invalidArgument, operation: "merge", item: folder.path, message: """
                shard\(missing.count == 1 ? "" : "s") \(missing.map(String.init).joined(separator: ", ")) of \(count) \
                not there yet (no cards-<i>-of-\(count).jsonl); merge when every shard has run
                """)
        }
        let shardFiles = shards.map(\.name)
        var byID: [String: ThumbnailCard] = [:]
        for name in shardFiles {
            for card in read(folder.appendingPathComponent(name)).cards { byID[card.publicID] = card }
        }
        try write(Array(byID.values), to: folder.appendingPathComponent("cards.jsonl"))
        return byID.count
    }
}
