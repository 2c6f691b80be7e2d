import Feed
import Foundation
import Media
import TestSupport
import Testing
@testable import Thumbnails

/// The batch: cards, incremental runs, removal, failures, shards and merge, hostile ids.
@Suite struct BatchTests {
    /// A folder of copies of some fixtures, and the output folder next to it.
    struct Library {
        let root: URL
        let media: URL
        let out: URL

        init(_ names: [String]) throws {
            root = try TestFixtures.temporaryFolder("thumbs-batch")
            media = root.appendingPathComponent("media")
            out = root.appendingPathComponent("out")
            try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
            for name in names {
                try FileManager.default.copyItem(atPath: TestFixtures.media(name),
                                                 toPath: media.appendingPathComponent(name).path)
            }
        }

        func items() async throws -> [FeedItem] {
            try await DirectoryFeedLoader(root: media).loadAll().items
        }

        func run(force: Bool = false, shard: Shard = .all, jobs: Int = 2) async throws -> ThumbnailBatch.Summary {
            let configuration = ThumbnailBatch.Configuration(output: out, jobs: jobs, force: force, shard: shard)
            return try ThumbnailBatch(feed: try await items(), configuration: configuration).run()
        }

        func cards(_ name: String = "cards.jsonl") -> [ThumbnailCard] {
            CardFile.read(out.appendingPathComponent(name)).cards
        }
    }

    static let names = ["hevc.mp4", "vp9.webm", "rotate90.mp4", "image.png", "cover.mp3", "black_start.mp4"]

    @Test("a run writes one card per item and every thumbnail decodes")
    func firstRun() async throws {
        let library = try Library(Self.names)
        let summary = try await library.run()
        #expect(summary.items == Self.names.count && summary.rendered == Self.names.count)
        #expect(summary.failures.isEmpty)
        let cards = library.cards()
        #expect(cards.map(\.publicID).sorted() == cards.map(\.publicID))
        #expect(Set(cards.map(\.publicID)).count == Self.names.count)
        for card in cards {
            #expect(card.status == .ok)
            let path = library.out.appendingPathComponent(card.thumbnails[0]).path
            let info = try MediaFile(path: path).info
            #expect(info.primaryVideoStream?.width == card.width && card.width == 320)
        }
    }

    @Test("touching one source and deleting another redoes exactly one and removes one")
    func incremental() async throws {
        let library = try Library(Self.names)
        _ = try await library.run()
        let touched = library.media.appendingPathComponent("vp9.webm")
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)],
                                              ofItemAtPath: touched.path)
        try FileManager.default.removeItem(at: library.media.appendingPathComponent("hevc.mp4"))
        let before = library.cards().first { $0.publicID == "hevc" }
        let second = try await library.run()
        #expect(second.rendered == 1 && second.removed == 1 && second.skipped == Self.names.count - 2)
        #expect(!library.cards().contains { $0.publicID == "hevc" })
        let gone = try #require(before?.thumbnails.first)
        #expect(!FileManager.default.fileExists(atPath: library.out.appendingPathComponent(gone).path))
        let third = try await library.run()
        #expect(third.rendered == 0 && third.removed == 0)
        let forced = try await library.run(force: true)
        #expect(forced.rendered == Self.names.count - 1)
    }

    @Test("an HDR card made by the earlier tone curve is redone once, an SDR card is not; a card made by libavfilter's curve is kept")
    func hdrCardsOfTheEarlierCurveAreRedone() async throws {
        let library = try Library(["hevc.mp4"])
        try FileManager.default.copyItem(atPath: TestFixtures.transcode("hdr10_pq.mp4"),
                                         toPath: library.media.appendingPathComponent("hdr10_pq.mp4").path)
        let first = try await library.run()
        #expect(first.rendered == 2 && first.failures.isEmpty)
        let hdr = try #require(library.cards().first { $0.publicID == "hdr10_pq" })
        #expect(hdr.toneMapping == "pq" && hdr.options.hasSuffix(ThumbnailMaker.toneMappedMark))
        #expect(try await library.run().rendered == 0)
        // Cards as the earlier renderer wrote them: the same options, without the mark.
        let old = library.cards().map { card -> ThumbnailCard in
            var card = card
            if card.options.hasSuffix(ThumbnailMaker.toneMappedMark) {
                card.options = String(card.options.dropLast(ThumbnailMaker.toneMappedMark.count))
            }
            return card
        }
        try CardFile.write(old, to: library.out.appendingPathComponent("cards.jsonl"))
        let redo = try await library.run()
        #expect(redo.rendered == 1 && redo.skipped == 1)
        #expect(library.cards().first { $0.publicID == "hdr10_pq" }?.options.hasSuffix(ThumbnailMaker.toneMappedMark) == true)
        #expect(try await library.run().rendered == 0)
    }

    @Test("a deleted thumbnail is redone even when its source is unchanged")
    func missingOutput() async throws {
        let library = try Library(["hevc.mp4", "vp9.webm"])
        _ = try await library.run()
        try FileManager.default.removeItem(at: library.out.appendingPathComponent("hevc.jpg"))
        #expect(try await library.run().rendered == 1)
    }

    @Test("a bad item is recorded as failed in its card and the batch goes on")
    func failures() async throws {
        let library = try Library(["hevc.mp4"])
        try FileManager.default.copyItem(atPath: TestFixtures.bad("random.mp4"),
                                         toPath: library.media.appendingPathComponent("broken.mp4").path)
        let summary = try await library.run()
        #expect(summary.failures.count == 1)
        // The summary's counts add up (issue 15: "35 rendered … 3 failed" when 32 were rendered).
        #expect(summary.rendered == 1 && summary.rendered + summary.failures.count + summary.skipped == summary.items)
        let cards = Dictionary(uniqueKeysWithValues: library.cards().map { ($0.publicID, $0) })
        #expect(cards["hevc"]?.status == .ok)
        #expect(cards["broken"]?.status == .failed)
        #expect(cards["broken"]?.error?.hasPrefix("broken: ") == true)
        #expect(cards["broken"]?.thumbnails.isEmpty == true)
    }

    @Test("shards are disjoint, cover the feed, and merge into the cards of one unsharded run")
    func shardsAndMerge() async throws {
        let library = try Library(Self.names + ["vfr.mp4", "av1.mp4", "mpeg4.avi"])
        let count = 3
        var seen: [String] = []
        for i in 0..<count {
            let summary = try await library.run(shard: Shard(index: i, count: count)!)
            #expect(summary.failures.isEmpty)
            seen += library.cards("cards-\(i)-of-\(count).jsonl").map(\.publicID)
        }
        #expect(seen.count == Set(seen).count)
        #expect(Set(seen).count == Self.names.count + 3)
        try CardFile.merge(in: library.out)
        let merged = library.cards()
        let single = try Library(Self.names + ["vfr.mp4", "av1.mp4", "mpeg4.avi"])
        _ = try await single.run()
        let strip = { (cards: [ThumbnailCard]) in cards.map { card -> ThumbnailCard in
            var c = card
            // Two copies of the same files: only their paths and file dates differ.
            c.source = URL(fileURLWithPath: c.source).lastPathComponent
            c.sourceMtime = nil
            c.createdAt = ""
            return c
        } }
        #expect(strip(merged) == strip(single.cards()))
    }

    @Test("hostile public_ids never write outside OUT")
    func hostileIDs() throws {
        let root = try TestFixtures.temporaryFolder("thumbs-hostile")
        let out = root.appendingPathComponent("sub/out")
        let source = URL(fileURLWithPath: TestFixtures.media("hevc.mp4"))
        let items = OutputPathTests.hostile.map { FeedItem(publicID: $0, createdAt: Date(), source: source) }
        let summary = try ThumbnailBatch(feed: items, configuration: .init(output: out, jobs: 2)).run()
        #expect(summary.failures.isEmpty)
        let everything = FileManager.default.enumerator(atPath: root.path)?.allObjects as? [String] ?? []
        #expect(everything.allSatisfy { $0 == "sub" || $0.hasPrefix("sub/out") }, "\(everything)")
        let cards = CardFile.read(out.appendingPathComponent("cards.jsonl")).cards
        #expect(cards.count == Set(OutputPathTests.hostile).count)
        for card in cards {
            let file = out.appendingPathComponent(card.thumbnails[0]).standardizedFileURL
            #expect(file.path.hasPrefix(out.standardizedFileURL.path + "/"))
            #expect(FileManager.default.fileExists(atPath: file.path))
        }
    }

    @Test("an item whose outputs would overwrite an earlier item's fails with a clash and writes nothing")
    func outputClash() throws {
        let out = try TestFixtures.temporaryFolder("thumbs-clash")
        let clip = URL(fileURLWithPath: TestFixtures.media("hevc.mp4"))
        let image = URL(fileURLWithPath: TestFixtures.media("image.png"))
        // "a" with two positions writes a.jpg and a.2.jpg; "A.2" would be a.2.jpg on a case-insensitive disk, and
        // "a.jpg/x" needs a folder where a.jpg is a file. "b" is unrelated.
        let items = [FeedItem(publicID: "a", createdAt: Date(), source: clip),
                     FeedItem(publicID: "A.2", createdAt: Date(), source: image),
                     FeedItem(publicID: "a.jpg/x", createdAt: Date(), source: image),
                     FeedItem(publicID: "b", createdAt: Date(), source: image)]
        let options = ThumbnailOptions(positions: [.fraction(0.1), .fraction(0.5)])
        let summary = try ThumbnailBatch(feed: items, configuration: .init(output: out, options: options, jobs: 2)).run()
        #expect(Set(summary.failures.map(\.description)).count == 2)
        #expect(summary.failures.allSatisfy {
            if case .outputClash(_, "a", _) = $0 { return true } else { return false }
        }, "\(summary.failures)")
        let cards = CardFile.read(out.appendingPathComponent("cards.jsonl")).cards
        #expect(cards.first { $0.publicID == "a" }?.thumbnails == ["a.jpg", "a.2.jpg"])
        #expect(cards.first { $0.publicID == "b" }?.status == .ok)
        for id in ["A.2", "a.jpg/x"] {
            let card = try #require(cards.first { $0.publicID == id })
            #expect(card.status == .failed && card.thumbnails.isEmpty && card.error?.contains("clashes") == true)
        }
        // a's second thumbnail is its own picture (from the clip), not the image's.
        let second = try MediaFile(path: out.appendingPathComponent("a.2.jpg").path)
        #expect(second.info.primaryVideoStream?.width == 320)
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("A.2.jpg").path))
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("a.jpg/x.jpg").path))
    }

    @Test("a rerun clears the temporary files a killed writer left, and keeps a live writer's")
    func abandonedTemporaries() throws {
        let out = try TestFixtures.temporaryFolder("thumbs-temps")
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let sub = out.appendingPathComponent("folder")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let abandoned = sub.appendingPathComponent(".x.jpg.tmp-\(gone.processIdentifier)-12345")
        let live = out.appendingPathComponent(".y.jpg.tmp-\(getpid())-678")
        try Data("half".utf8).write(to: abandoned)
        try Data("half".utf8).write(to: live)
        let item = FeedItem(publicID: "b", createdAt: Date(), source: URL(fileURLWithPath: TestFixtures.media("image.png")))
        _ = try ThumbnailBatch(feed: [item], configuration: .init(output: out, jobs: 1)).run()
        #expect(!FileManager.default.fileExists(atPath: abandoned.path))
        #expect(FileManager.default.fileExists(atPath: live.path))
    }

    @Test("an item over the time limit fails as timed out and the others finish")
    func timeLimit() async throws {
        let server = try SilentServer()
        let stuck = FeedItem(publicID: "stuck", createdAt: Date(),
                             source: URL(string: "http://127.0.0.1:\(server.port)/clip.mp4")!)
        let fine = FeedItem(publicID: "fine", createdAt: Date(),
                            source: URL(fileURLWithPath: TestFixtures.media("hevc.mp4")))
        let out = try TestFixtures.temporaryFolder("thumbs-timeout")
        let summary = try ThumbnailBatch(feed: [stuck, fine],
                                         configuration: .init(output: out, jobs: 2, timeLimit: 0.5)).run()
        #expect(summary.failures.count == 1)
        let cards = CardFile.read(out.appendingPathComponent("cards.jsonl")).cards
        #expect(cards.first { $0.publicID == "fine" }?.status == .ok)
        let error = try #require(cards.first { $0.publicID == "stuck" }?.error)
        #expect(error.contains("time limit") || error.contains("timed out"), "\(error)")
    }

    @Test("URL items without version facts are checked with HEAD: unchanged ones skipped, a touched one redone")
    func remoteIncremental() throws {
        let library = try Library(["hevc.mp4", "vp9.webm"])
        let server = try StaticHTTPServer(folder: library.media.path)
        let items = ["hevc.mp4", "vp9.webm"].map {
            FeedItem(publicID: $0, createdAt: Date(), source: URL(string: server.url($0))!)
        }
        let batch = ThumbnailBatch(feed: items, configuration: .init(output: library.out, jobs: 2))
        let first = try batch.run()
        #expect(first.rendered == 2 && first.failures.isEmpty)
        #expect(library.cards().allSatisfy { $0.sourceEtag?.hasPrefix("last-modified:") == true })
        let second = try batch.run()
        #expect(second.rendered == 0 && second.skipped == 2)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(120)],
                                              ofItemAtPath: library.media.appendingPathComponent("vp9.webm").path)
        let third = try batch.run()
        #expect(third.rendered == 1 && third.skipped == 1)
    }

    @Test("reading a card file skips a torn last line")
    func tornLine() throws {
        let folder = try TestFixtures.temporaryFolder("thumbs-cards")
        let file = folder.appendingPathComponent("cards.jsonl")
        let card = ThumbnailCard(publicID: "a", createdAt: "2026-01-01T00:00:00Z", thumbnails: ["a.jpg"],
                                 source: "/a.mp4", status: .ok, options: "x")
        try CardFile.write([card], to: file)
        let handle = try FileHandle(forWritingTo: file)
        handle.seekToEndOfFile()
        handle.write(Data("{\"public_id\":\"b\",\"crea".utf8))
        try handle.close()
        let read = CardFile.read(file)
        #expect(read.cards == [card] && read.skippedLines == 1)
    }
}
