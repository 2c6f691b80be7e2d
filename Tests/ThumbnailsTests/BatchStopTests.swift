import Feed
import Foundation
import Media
import TestSupport
import Testing
@testable import Thumbnails

/// ``ThumbnailBatch/stop()``: the items in hand finish and are recorded, the others are neither failures nor removed,
/// and the card file keeps their previous cards for the next run.
@Suite struct BatchStopTests {
    static let names = ["hevc.mp4", "vp9.webm", "rotate90.mp4", "image.png", "black_start.mp4"]

    /// A folder of fixtures and the output folder next to it.
    static func library() throws -> (media: URL, out: URL) {
        let root = try TestFixtures.temporaryFolder("thumbs-stop")
        let media = root.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        for name in names {
            try FileManager.default.copyItem(atPath: TestFixtures.media(name),
                                             toPath: media.appendingPathComponent(name).path)
        }
        return (media, root.appendingPathComponent("out"))
    }

    static func batch(_ media: URL, _ out: URL) async throws -> ThumbnailBatch {
        let items = try await DirectoryFeedLoader(root: media, order: .name).loadAll().items
        return ThumbnailBatch(feed: items, configuration: ThumbnailBatch.Configuration(output: out, jobs: 1))
    }

    @Test("a batch stopped after its first item records that one, leaves the rest unreached; the next run does them")
    func stopMidway() async throws {
        let (media, out) = try Self.library()
        defer { try? FileManager.default.removeItem(at: media.deletingLastPathComponent()) }
        let batch = try await Self.batch(media, out)
        let summary = try batch.run { _ in batch.stop() }
        #expect(batch.isStopped)
        #expect(summary.rendered == 1 && summary.notReached == Self.names.count - 1, "\(summary)")
        #expect(summary.failures.isEmpty && summary.removed == 0)
        let cards = CardFile.read(summary.cardFile).cards
        #expect(cards.count == 1 && cards.first?.status == .ok)
        let rest = try await Self.batch(media, out).run()
        #expect(rest.skipped == 1 && rest.rendered == Self.names.count - 1 && rest.notReached == 0, "\(rest)")
        #expect(CardFile.read(rest.cardFile).cards.count == Self.names.count)
    }

    @Test("""
        a batch stopped before it runs renders nothing and keeps the previous cards of the changed items it did not \
        reach
        """)
    func stopBeforeRun() async throws {
        let (media, out) = try Self.library()
        defer { try? FileManager.default.removeItem(at: media.deletingLastPathComponent()) }
        let first = try await Self.batch(media, out).run()
        #expect(first.rendered == Self.names.count)
        let before = CardFile.read(first.cardFile).cards
        // Every source changes (a new time), so every item is to do; none is reached.
        let later = Date().addingTimeInterval(60)
        for name in Self.names {
            try FileManager.default.setAttributes([.modificationDate: later],
                                                  ofItemAtPath: media.appendingPathComponent(name).path)
        }
        let batch = try await Self.batch(media, out)
        batch.stop()
        let stopped = try batch.run()
        #expect(stopped.rendered == 0 && stopped.skipped == 0 && stopped.failures.isEmpty, "\(stopped)")
        #expect(stopped.notReached == Self.names.count && stopped.removed == 0)
        let kept = CardFile.read(stopped.cardFile).cards
        #expect(kept.map(\.publicID) == before.map(\.publicID))
        #expect(kept.map(\.sourceMtime) == before.map(\.sourceMtime), "the previous cards, unchanged")
        for card in kept {
            let paths = card.thumbnails.map { out.appendingPathComponent($0).path }
            #expect(paths.allSatisfy { FileManager.default.fileExists(atPath: $0) }, "\(paths)")
        }
        let redo = try await Self.batch(media, out).run()
        #expect(redo.rendered == Self.names.count && redo.skipped == 0, "\(redo)")
    }
}
