import Feed
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
        let (cards, skipped) = JSONLinesFile.read(ThumbnailCard.self, from: url)
        return (cards, skipped)
    }

    /// Writes `cards`, sorted by `public_id`, one per line, atomically.
    /// - Throws: ``MediaError`` `io` naming the file.
    public static func write(_ cards: [ThumbnailCard], to url: URL) throws {
        try JSONLinesFile.write(cards, id: \.publicID, to: url)
    }

    /// Joins every per-shard card file (`cards-<i>-of-<n>.jsonl`) in `folder` into `cards.jsonl`; a `public_id`
    /// found twice keeps the card of the later file in name order. Returns the number of cards written.
    ///
    /// The shard files must be one complete set: all of the same count `n`, every index `0..<n` present once, each
    /// named exactly as its shard writes it, each a regular file of nothing but cards. Files of two shardings
    /// (`-of-2` beside `-of-3`, left by an earlier run), an index out of range or spelled another way (`00`), a
    /// missing shard or a damaged file would make a card file that is not the feed, so nothing is written then.
    /// Holds the output folder's lock exclusively: no batch writes into the folder while it merges.
    /// - Throws: ``MediaError`` `io` (also when a batch is running in the folder), `fileNotFound` when there is no
    ///   shard file, `invalidArgument` for a set that is mixed, impossible, incomplete or damaged.
    @discardableResult
    public static func merge(in folder: URL) throws -> Int {
        // No batch may write card files while they are joined (the folder's lock, exclusively).
        let lock = try OutputLock(path: folder.appendingPathComponent(".videofeed.lock").path, exclusive: true,
                                  item: folder.path)
        defer { lock.release() }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let candidates = names.filter { $0.hasPrefix("cards-") && $0.hasSuffix(".jsonl") && $0.contains("-of-") }
            .sorted()
        guard !candidates.isEmpty else {
            throw MediaError(.fileNotFound, operation: "merge", item: folder.path,
                             message: "no cards-<i>-of-<n>.jsonl files")
        }
        func refuse(_ item: String, _ message: String) -> MediaError {
            MediaError(.invalidArgument, operation: "merge", item: item, message: message)
        }
        var shards: [(name: String, index: Int, count: Int)] = []
        for name in candidates {
            let path = folder.appendingPathComponent(name).path
            let fields = name.dropFirst("cards-".count).dropLast(".jsonl".count).components(separatedBy: "-of-")
            // Exactly the name a shard writes (Shard.cardFileName): no "00", "+0" or "02" spellings of a number.
            guard fields.count == 2, let index = Int(fields[0]), let count = Int(fields[1]),
                  count >= 2, count <= Shard.maxCount, index >= 0, index < count,
                  Shard(index: index, count: count)?.cardFileName == name else {
                throw refuse(path, "not the card file of a possible shard i of n (0 <= i < n <= \(Shard.maxCount))")
            }
            var info = stat()
            guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                throw refuse(path, "not a regular file")
            }
            shards.append((name, index, count))
        }
        let counts = Set(shards.map(\.count)).sorted()
        guard counts.count == 1, let count = counts.first else {
            throw refuse(folder.path, """
                card files of different shardings (\(counts.map { "-of-\($0)" }.joined(separator: ", "))); remove \
                the files of the old sharding first
                """)
        }
        let missing = Set(0..<count).subtracting(shards.map(\.index)).sorted()
        guard missing.isEmpty else {
            let shown = missing.prefix(10).map(String.init).joined(separator: ", ") + (missing.count > 10 ? ", …" : "")
            throw refuse(folder.path, """
                shard\(missing.count == 1 ? "" : "s") \(shown) of \(count) not there yet (no \
                cards-<i>-of-\(count).jsonl); merge when every shard has run
                """)
        }
        var byID: [String: ThumbnailCard] = [:]
        for shard in shards {
            let url = folder.appendingPathComponent(shard.name)
            let (cards, skipped) = read(url)
            guard skipped == 0 else {
                throw refuse(url.path, "\(skipped) lines are not cards; a shard's card file is written whole, so this "
                             + "one was changed by something else")
            }
            for card in cards { byID[card.publicID] = card }
        }
        try write(Array(byID.values), to: folder.appendingPathComponent("cards.jsonl"))
        return byID.count
    }
}
