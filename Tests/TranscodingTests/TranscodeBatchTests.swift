import Feed
import Foundation
import Media
import TestSupport
import Testing
import Transcode

/// The batch: records, incremental reruns, failures that stay with their item, atomic item folders.
@Suite struct TranscodeBatchTests {
    static var settings: TranscodeSettings {
        var s = TranscodeSettings()
        s.ladder = [Size(width: 360, height: 640)]
        s.preview = PreviewSettings(seconds: 1)
        return s
    }

    /// A feed folder with copies of a few fixtures, and an output folder.
    static func feed(_ names: [String]) throws -> (source: URL, out: URL) {
        let root = try TestFixtures.temporaryFolder("batch")
        let source = root.appendingPathComponent("feed")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        for name in names {
            let from = name.hasPrefix("bad/") ? TestFixtures.bad(String(name.dropFirst(4)))
                : TestFixtures.transcode(name)
            try FileManager.default.copyItem(atPath: from,
                                             toPath: source.appendingPathComponent((name as NSString).lastPathComponent).path)
        }
        return (source, root.appendingPathComponent("out"))
    }

    static func run(_ source: URL, _ out: URL, force: Bool = false) async throws -> TranscodeBatch.Summary {
        let page = try await DirectoryFeedLoader(root: source).loadAll(maxPages: 10)
        var configuration = TranscodeBatch.Configuration(output: out, settings: settings, jobs: 2, force: force)
        configuration.timeLimit = 120
        return try TranscodeBatch(feed: page.items, configuration: configuration).run()
    }

    @Test("a batch records every item; a rerun skips the unchanged ones and redoes a changed one in a new folder, removing the old")
    func incremental() async throws {
        let (source, out) = try Self.feed(["rotated_phone.mp4", "anamorphic.mkv", "bad/truncated.mp4"])
        // A hostile playlist uploaded as .mp4, listing a local file: refused by the open policy, named; the rest goes on.
        try FileManager.default.copyItem(atPath: TestFixtures.folder.appendingPathComponent("hostile/local_read.m3u8").path,
                                         toPath: source.appendingPathComponent("local_read.mp4").path)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        let first = try await Self.run(source, out)
        #expect(first.items == 4 && first.transcoded == 2 && first.failures.count == 2, "\(first.failures)")
        #expect(first.failures.map(\.item).sorted() == ["local_read", "truncated"])
        #expect(first.failures.contains { $0.description.contains("local_read") && $0.description.contains("policy") },
                "\(first.failures)")
        let records = RenditionFile.read(out.appendingPathComponent("renditions.jsonl")).records
        #expect(records.map(\.publicID) == ["anamorphic", "local_read", "rotated_phone", "truncated"])
        let phone = try #require(records.first { $0.publicID == "rotated_phone" })
        #expect(phone.status == .ok && phone.hasAudio == true)
        #expect(phone.renditions.first?.codecs.hasSuffix(",mp4a.40.2") == true)
        #expect(phone.renditions.first.map { "\($0.width)x\($0.height)" } == "272x480")
        for path in phone.paths { #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent(path).path), "\(path)") }
        #expect(records.first { $0.publicID == "truncated" }?.status == .failed)
        #expect(records.first { $0.publicID == "truncated" }?.error?.contains("truncated") == true)

        let second = try await Self.run(source, out)
        #expect(second.skipped == 2 && second.transcoded == 0 && second.failures.count == 2)

        // A new version of one source: a new folder, and the old one gone once the record points at the new.
        let oldFolder = try #require(phone.folder)
        let file = source.appendingPathComponent("rotated_phone.mp4")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: file.path)
        let third = try await Self.run(source, out)
        #expect(third.transcoded == 1 && third.skipped == 1)
        let newFolder = RenditionFile.read(out.appendingPathComponent("renditions.jsonl")).records
            .first { $0.publicID == "rotated_phone" }?.folder
        #expect(newFolder != nil && newFolder != oldFolder)
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(oldFolder).path))

        // An item gone from the feed: its outputs and record go.
        try FileManager.default.removeItem(at: source.appendingPathComponent("anamorphic.mkv"))
        let fourth = try await Self.run(source, out)
        #expect(fourth.removed == 1)
        let left = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(!left.contains { $0.hasPrefix("anamorphic") }, "\(left)")
    }

    @Test("a shard clears only its own items' staging folders: another shard's writer may be alive on another host")
    func shardStaging() async throws {
        let (source, out) = try Self.feed(["long_gop_b.mp4", "surround.mp4", "hlg.mp4", "mono_22k.mkv"])
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        let page = try await DirectoryFeedLoader(root: source).loadAll(maxPages: 10)
        let shard = try #require(Shard(index: 0, count: 2))
        let mine = try #require(page.items.first { shard.contains($0.publicID) }?.publicID)
        let theirs = try #require(page.items.first { !shard.contains($0.publicID) }?.publicID)
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let own = out.appendingPathComponent(".\(mine).0123abcd.tmp-999999-1")
        let other = out.appendingPathComponent(".\(theirs).0123abcd.tmp-999999-1")
        for folder in [own, other] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        var configuration = TranscodeBatch.Configuration(output: out, settings: Self.settings, jobs: 1, shard: shard)
        configuration.timeLimit = 120
        _ = try TranscodeBatch(feed: page.items, configuration: configuration).run()
        #expect(!FileManager.default.fileExists(atPath: own.path))
        #expect(FileManager.default.fileExists(atPath: other.path), "shard 0 removed shard 1's staging folder")
    }

    @Test("a killed run's staging folder is removed by the next run, and no item folder is ever half made")
    func staging() async throws {
        let (source, out) = try Self.feed(["long_gop_b.mp4"])
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        // What a run killed mid-item leaves: a hidden staging folder named for a process that is gone.
        let abandoned = out.appendingPathComponent(".long_gop_b.0123abcd.tmp-999999-7")
        try FileManager.default.createDirectory(at: abandoned, withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: abandoned.appendingPathComponent("720x1280.mp4"))
        let summary = try await Self.run(source, out)
        #expect(summary.transcoded == 1)
        let left = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(!left.contains { $0.contains(".tmp-") }, "\(left)")
        let record = try #require(RenditionFile.read(out.appendingPathComponent("renditions.jsonl")).records.first)
        let folder = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent(try #require(record.folder)).path)
        #expect(Set(folder) == ["360x640.mp4", "360x640", "master.m3u8", "preview.mp4", "preview.webp"])
    }
}
