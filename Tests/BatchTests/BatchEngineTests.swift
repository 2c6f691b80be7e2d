@testable import Batch
import EngineSupport
import Feed
import Foundation
import Media
import TestSupport
import Testing

/// A maker for the engine's own tests: an item's outputs are text files holding its source's bytes, named by a
/// table (`outputs`), so a test can move a file from one item to another between runs.
struct TextMaker: BatchMaker {
    struct Record: Codable, Sendable, Hashable {
        var id: String
        var files: [String]
        var size: Int64?
        var mtime: Double?
        var ok: Bool
    }
    struct Failure: Error, Sendable, CustomStringConvertible {
        var item: String
        var description: String { "\(item): failed" }
    }

    let output: URL
    /// Each item's output files; an item not in the table writes `<id>.txt`.
    var outputs: [String: [String]] = [:]
    /// Items that fail.
    var failing: Set<String> = []
    /// Failing items that keep their previous outputs.
    var keeping: Set<String> = []

    func recordFileName(for shard: Shard) -> String {
        shard.count == 1 ? "records.jsonl" : "records-\(shard.index)-of-\(shard.count).jsonl"
    }
    func readRecords(from url: URL) -> [Record] { JSONLinesFile.read(Record.self, from: url).records }
    func writeRecords(_ records: [Record], to url: URL) throws { try JSONLinesFile.write(records, id: \.id, to: url) }
    func id(of record: Record) -> String { record.id }
    var outputKind: BatchOutputKind { .files }
    func outputs(of record: Record) -> [String] { record.files }
    var fingerprint: String { "text" }
    func facts(of record: Record) -> BatchRecordFacts {
        BatchRecordFacts(ok: record.ok, stamp: SourceStamp(size: record.size, mtime: record.mtime), fingerprint: "text",
                         files: record.files)
    }
    func outputNames(of publicID: String) -> [BatchOutputName] {
        (outputs[publicID] ?? [publicID + ".txt"]).map { .exactly($0) }
    }
    func keepsOutputs(of previous: Record, after failure: Failure) -> Bool { keeping.contains(failure.item) }
    func make(_ item: BatchItem, previous: Record?) -> (record: Record, failure: Failure?) {
        let id = item.item.publicID
        var record = Record(id: id, files: [], size: item.stamp.size, mtime: item.stamp.mtime, ok: true)
        if failing.contains(id) {
            record.ok = false
            return (record, Failure(item: id))
        }
        let bytes = [UInt8]((try? Data(contentsOf: item.item.source)) ?? Data())
        for name in outputs[id] ?? [id + ".txt"] {
            guard let url = try? OutputFolder(output).prepare(name),
                  (try? AtomicFile.write(bytes, to: url.path)) != nil else {
                record.ok = false
                return (record, Failure(item: id))
            }
            record.files.append(name)
        }
        return (record, nil)
    }
}

@Suite struct BatchEngineTests {
    /// Items `ids` whose sources are small text files in `folder`.
    static func feed(_ ids: [String], in folder: URL) throws -> [FeedItem] {
        let sources = folder.appendingPathComponent("sources")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        return try ids.map { id in
            let url = sources.appendingPathComponent(id)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(id.utf8).write(to: url)
            return FeedItem(publicID: id, createdAt: Date(timeIntervalSince1970: 0), source: url)
        }
    }

    static func settings(_ out: URL, shard: Shard = .all) -> BatchSettings {
        BatchSettings(output: out, jobs: 2, timeLimit: 30, force: false, shard: shard,
                      openOptions: .untrusted(streamInfo: .header))
    }

    static func exists(_ out: URL, _ path: String) -> Bool {
        FileManager.default.fileExists(atPath: out.appendingPathComponent(path).path)
    }

    /// A process id that no process has (above Linux's largest `pid_max`): a writer on another host, as seen here.
    static let foreignPID = "4194400"

    @Test("two shards on one folder never remove each other's temporaries, whatever their process ids")
    func shardTemporaries() throws {
        let root = try TestFixtures.temporaryFolder("batch-shards")
        let out = root.appendingPathComponent("out")
        // Some items live in a subfolder (a public_id with a slash): their temporaries are there too.
        let ids = (0..<12).map { "item-\($0)" } + (0..<6).map { "sub/deep-\($0)" }
        let feed = try Self.feed(ids, in: root)
        let halves = [Shard(index: 0, count: 2)!, Shard(index: 1, count: 2)!]
        let owned = halves.map { shard in ids.filter { shard.contains($0) } }
        #expect(owned.allSatisfy { !$0.isEmpty })
        try FileManager.default.createDirectory(at: out.appendingPathComponent("sub"), withIntermediateDirectories: true)
        // What killed writers left, or live writers on other hosts are writing: each item's temporary, each shard's
        // record file's, and a hidden file that is no one's temporary.
        func plant(_ name: String) throws { try Data("x".utf8).write(to: out.appendingPathComponent(name)) }
        func temporary(_ id: String) -> String {
            let name = (id as NSString).lastPathComponent, folder = (id as NSString).deletingLastPathComponent
            return (folder.isEmpty ? "" : folder + "/") + ".\(name).txt.tmp-\(Self.foreignPID)-7"
        }
        for id in ids { try plant(temporary(id)) }
        for shard in halves { try plant(".records-\(shard.index)-of-2.jsonl.tmp-\(Self.foreignPID)-9") }
        try plant(".notes.tmp-\(Self.foreignPID)-1")

        for (n, shard) in halves.enumerated() {
            let summary = try BatchEngine(feed: feed, settings: Self.settings(out, shard: shard),
                                          maker: TextMaker(output: out)).run()
            #expect(summary.made == owned[n].count && summary.failures.isEmpty)
            // This shard's own are gone; the other shard's (not yet run) and the stranger's stay.
            for id in owned[n] { #expect(!Self.exists(out, temporary(id)), "\(id)") }
            #expect(!Self.exists(out, ".records-\(shard.index)-of-2.jsonl.tmp-\(Self.foreignPID)-9"))
            if n == 0 {
                for id in owned[1] { #expect(Self.exists(out, temporary(id)), "\(id)") }
                #expect(Self.exists(out, ".records-1-of-2.jsonl.tmp-\(Self.foreignPID)-9"))
            }
            #expect(Self.exists(out, ".notes.tmp-\(Self.foreignPID)-1"))
        }
        for id in ids { #expect(Self.exists(out, "\(id).txt")) }
    }

    @Test("an unsharded run, holding the folder alone, removes the temporaries of writers that are gone")
    func unshardedTemporaries() throws {
        let root = try TestFixtures.temporaryFolder("batch-whole")
        let out = root.appendingPathComponent("out")
        let feed = try Self.feed(["a"], in: root)
        try FileManager.default.createDirectory(at: out.appendingPathComponent("deep"), withIntermediateDirectories: true)
        let planted = [".a.txt.tmp-\(Self.foreignPID)-1", "deep/.old.jpg.tmp-\(Self.foreignPID)-2"]
        for name in planted { try Data("x".utf8).write(to: out.appendingPathComponent(name)) }
        _ = try BatchEngine(feed: feed, settings: Self.settings(out), maker: TextMaker(output: out)).run()
        for name in planted { #expect(!Self.exists(out, name), "\(name)") }
    }

    @Test("outputs are removed after the record file, and never one that a record names today")
    func removal() throws {
        let root = try TestFixtures.temporaryFolder("batch-removal")
        let out = root.appendingPathComponent("out")
        let feed = try Self.feed(["a", "b", "gone"], in: root)
        // First run: a writes a.txt and shared.txt; gone writes gone.txt.
        var maker = TextMaker(output: out, outputs: ["a": ["a.txt", "shared.txt"], "b": ["b.txt"]])
        var summary = try BatchEngine(feed: feed, settings: Self.settings(out), maker: maker).run()
        #expect(summary.made == 3)
        // Second run: a's source changed and it now writes a.txt only, b writes shared.txt too, gone is gone.
        try Data("a, again".utf8).write(to: feed[0].source)
        try Data("b, again".utf8).write(to: feed[1].source)
        maker.outputs = ["a": ["a.txt"], "b": ["b.txt", "shared.txt"]]
        summary = try BatchEngine(feed: Array(feed.prefix(2)), settings: Self.settings(out), maker: maker).run()
        #expect(summary.made == 2 && summary.removed == 1)
        #expect(!Self.exists(out, "gone.txt"))
        #expect(Self.exists(out, "a.txt") && Self.exists(out, "b.txt"))
        // a no longer names shared.txt, but b does: it stays, and holds b's bytes.
        #expect((try? String(contentsOf: out.appendingPathComponent("shared.txt"), encoding: .utf8)) == "b, again")
        let records = maker.readRecords(from: summary.recordFile)
        #expect(records.map(\.id).sorted() == ["a", "b"])
        #expect(records.flatMap(\.files).allSatisfy { Self.exists(out, $0) })

        // Third run: b fails; its record names nothing, so its old files go, a's stay.
        maker.failing = ["b"]
        try Data("b, broken".utf8).write(to: feed[1].source)
        summary = try BatchEngine(feed: Array(feed.prefix(2)), settings: Self.settings(out), maker: maker).run()
        #expect(summary.failures.map(\.item) == ["b"] && summary.skipped == 1)
        #expect(!Self.exists(out, "b.txt") && !Self.exists(out, "shared.txt") && Self.exists(out, "a.txt"))
    }

    @Test("a stopped batch keeps the previous records of the items it did not reach, and removes nothing of theirs")
    func stopKeepsRecords() throws {
        let root = try TestFixtures.temporaryFolder("batch-stop")
        let out = root.appendingPathComponent("out")
        let feed = try Self.feed(["a", "b", "c"], in: root)
        let maker = TextMaker(output: out, outputs: ["a": ["a.txt"], "b": ["b.txt"], "c": ["c.txt"]])
        _ = try BatchEngine(feed: feed, settings: Self.settings(out), maker: maker).run()
        for item in feed { try Data("new".utf8).write(to: item.source) }
        let engine = BatchEngine(feed: feed, settings: Self.settings(out), maker: maker)
        engine.stop()
        let summary = try engine.run()
        #expect(summary.notReached == 3 && summary.made == 0)
        #expect(maker.readRecords(from: summary.recordFile).map(\.id).sorted() == ["a", "b", "c"])
        for name in ["a.txt", "b.txt", "c.txt"] { #expect(Self.exists(out, name)) }
    }

    @Test("a failed item whose maker keeps its outputs (a thumbs output clash) removes none of them")
    func failureKeeps() throws {
        let root = try TestFixtures.temporaryFolder("batch-keep")
        let out = root.appendingPathComponent("out")
        let feed = try Self.feed(["a", "b"], in: root)
        var maker = TextMaker(output: out)
        _ = try BatchEngine(feed: feed, settings: Self.settings(out), maker: maker).run()
        for item in feed { try Data("new".utf8).write(to: item.source) }
        maker.failing = ["a", "b"]
        maker.keeping = ["a"]
        let summary = try BatchEngine(feed: feed, settings: Self.settings(out), maker: maker).run()
        #expect(summary.failures.count == 2)
        #expect(Self.exists(out, "a.txt") && !Self.exists(out, "b.txt"))
    }

    /// What each write of the record file does with the stale outputs: the file holds a's old record (naming
    /// a-old.txt), b's new one (naming shared.txt and, in other letters, CLIP.txt), and nothing of gone.
    @Test("after a write, a stale output its own record still names waits; one another record names stays; the rest go")
    func removeUnnamed() throws {
        let out = try TestFixtures.temporaryFolder("batch-unnamed")
        for name in ["a-old.txt", "shared.txt", "clip.txt", "gone.txt", "b-old.txt"] {
            try Data("x".utf8).write(to: out.appendingPathComponent(name))
        }
        typealias Engine = BatchEngine<TextMaker>
        let stale = Locked<[Engine.StaleOutput]>([
            .init(id: "a", path: "a-old.txt"), .init(id: "a", path: "shared.txt"), .init(id: "gone", path: "gone.txt"),
            .init(id: "gone", path: "clip.txt"), .init(id: "b", path: "b-old.txt"),
        ])
        let written = [
            TextMaker.Record(id: "a", files: ["a-old.txt"], ok: true),
            TextMaker.Record(id: "b", files: ["shared.txt", "CLIP.txt"], ok: true),
        ]
        Engine.removeUnnamed(stale, written: written, maker: TextMaker(output: out), folder: OutputFolder(out))
        #expect(stale.withLock { $0.map(\.path) } == ["a-old.txt"])
        #expect(Self.exists(out, "a-old.txt") && Self.exists(out, "shared.txt") && Self.exists(out, "clip.txt"))
        #expect(!Self.exists(out, "gone.txt") && !Self.exists(out, "b-old.txt"))
        // The next write holds a's new record: its old file goes.
        Engine.removeUnnamed(stale, written: [TextMaker.Record(id: "a", files: ["a.txt"], ok: true)],
                             maker: TextMaker(output: out), folder: OutputFolder(out))
        #expect(stale.withLock { $0 }.isEmpty && !Self.exists(out, "a-old.txt"))
    }
}
