import Feed
import Foundation
import Media
import TestSupport
import Testing
import Transcode

/// ``TranscodeBatch/stop()``: the item in hand finishes whole and is recorded; the items not reached keep their
/// previous records and folders, are neither failures nor removed, and the next run does them.
@Suite struct TranscodeBatchStopTests {
    static var settings: TranscodeSettings {
        var s = TranscodeSettings()
        s.ladder = [Size(width: 360, height: 640)]
        s.preview = nil
        return s
    }

    static let names = ["rotated_phone.mp4", "long_gop_b.mp4", "mono_22k.mkv"]

    static func batch(_ source: URL, _ out: URL) async throws -> TranscodeBatch {
        let items = try await DirectoryFeedLoader(root: source, order: .name).loadAll().items
        return TranscodeBatch(feed: items, configuration: TranscodeBatch.Configuration(output: out, settings: settings,
                                                                                        jobs: 1))
    }

    @Test("""
        stopped after the first item: that item's folder and record are whole, the changed items not reached keep \
        their old versions, the next run redoes them
        """)
    func stopMidway() async throws {
        let root = try TestFixtures.temporaryFolder("transcode-stop")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = root.appendingPathComponent("feed"), out = root.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        for name in Self.names {
            try FileManager.default.copyItem(atPath: TestFixtures.transcode(name),
                                             toPath: source.appendingPathComponent(name).path)
        }
        let first = try await Self.batch(source, out).run()
        #expect(first.transcoded == Self.names.count && first.failures.isEmpty)
        let recordFile = out.appendingPathComponent("renditions.jsonl")
        let before = Dictionary(uniqueKeysWithValues: RenditionFile.read(recordFile).records.map { ($0.publicID, $0) })

        // Every source changes: each item is to be made again in a new version folder.
        let later = Date().addingTimeInterval(60)
        for name in Self.names {
            try FileManager.default.setAttributes([.modificationDate: later],
                                                  ofItemAtPath: source.appendingPathComponent(name).path)
        }
        let batch = try await Self.batch(source, out)
        let stopped = try batch.run { _ in batch.stop() }
        #expect(stopped.transcoded == 1 && stopped.notReached == Self.names.count - 1, "\(stopped)")
        #expect(stopped.failures.isEmpty && stopped.removed == 0)
        let records = RenditionFile.read(recordFile).records
        #expect(records.count == Self.names.count)
        let changed = records.filter { $0.folder != before[$0.publicID]?.folder }
        #expect(changed.count == 1, "one item made anew")
        for record in records {
            #expect(record.status == .ok)
            let folder = try #require(record.folder)
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent(folder).path), "\(folder)")
        }
        // The redone item's old folder is gone; the others' are still served.
        if let redone = changed.first, let old = before[redone.publicID]?.folder {
            #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(old).path))
        }
        let staging = (try FileManager.default.contentsOfDirectory(atPath: out.path)).filter { $0.contains(".tmp-") }
        #expect(staging.isEmpty, "\(staging)")

        let rest = try await Self.batch(source, out).run()
        #expect(rest.transcoded == Self.names.count - 1 && rest.skipped == 1 && rest.notReached == 0, "\(rest)")
    }
}
