import EngineSupport
import Feed
import Foundation
import Media
import TestSupport
import Testing
@testable import Thumbnails

/// The batch's own guards (issue 14): one run per card file, a card file that trails finished items by about a
/// second even while a worker is stuck, and pictures of extreme shape clamped to the box.
@Suite struct BatchSafetyTests {
    @Test("runs that would mix their outputs are refused: an unsharded run holds the folder, a shard its card file")
    func lock() throws {
        let out = try TestFixtures.temporaryFolder("thumbs-lock")
        let item = FeedItem(publicID: "fine", createdAt: Date(), source: URL(fileURLWithPath: TestFixtures.media("hevc.mp4")))
        func batch(_ shard: Shard) -> ThumbnailBatch {
            ThumbnailBatch(feed: [item], configuration: .init(output: out, jobs: 1, shard: shard))
        }
        let half0 = Shard(index: 0, count: 2)!, half1 = Shard(index: 1, count: 2)!
        func refused(_ body: () throws -> Void) -> Bool {
            do { try body() } catch let error as MediaError { return error.operation == "lock" } catch {}
            return false
        }

        // An unsharded run in progress: no other run, sharded or not, and no merge.
        var held = try OutputLock.forRun(in: out, shardFile: nil)
        #expect(refused { _ = try batch(.all).run() })
        #expect(refused { _ = try batch(half0).run() })
        #expect(refused { _ = try CardFile.merge(in: out) })
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("fine.jpg").path))
        held.forEach { $0.release() }

        // Shard 0 of 2 in progress: shard 1 runs beside it; shard 0 again, an unsharded run and a merge do not.
        held = try OutputLock.forRun(in: out, shardFile: half0.cardFileName)
        #expect(refused { _ = try batch(half0).run() })
        #expect(refused { _ = try batch(.all).run() })
        #expect(refused { _ = try CardFile.merge(in: out) })
        #expect(throws: Never.self) { _ = try batch(half1).run() }
        held.forEach { $0.release() }

        // Released (as the kernel does when a holder dies): the next run goes ahead.
        let summary = try batch(.all).run()
        #expect(summary.failures.isEmpty && summary.rendered == 1)
    }

    @Test("cards of finished items reach the card file while another item is stuck", .timeLimit(.minutes(2)))
    func cardLag() throws {
        let server = try SilentServer()
        let stuck = FeedItem(publicID: "stuck", createdAt: Date(),
                             source: URL(string: "http://127.0.0.1:\(server.port)/clip.mp4")!)
        let fine = ["hevc.mp4", "vp9.webm", "av1.mp4"].map {
            FeedItem(publicID: $0, createdAt: Date(), source: URL(fileURLWithPath: TestFixtures.media($0)))
        }
        let out = try TestFixtures.temporaryFolder("thumbs-lag")
        // The stuck item would hold its worker for its whole limit; the test ends it (closing the server) once the
        // fine items' cards are in the file, so the limit is only the bound of the wait.
        let batch = ThumbnailBatch(feed: [stuck] + fine, configuration: .init(output: out, jobs: 2, timeLimit: 60))
        let finished = DispatchSemaphore(value: 0)
        let ended = Locked(false)
        DispatchQueue.global().async {
            _ = try? batch.run()
            ended.set(true)
            finished.signal()
        }
        // Events, not a delay: the card file is read until it lists the fine items or the batch has ended.
        let cardFile = out.appendingPathComponent("cards.jsonl")
        var listed: Set<String> = []
        var endedFirst = false
        while listed != Set(fine.map(\.publicID)) {
            if ended.get() { endedFirst = true; break }
            usleep(20_000)
            listed = Set(CardFile.read(cardFile).cards.map(\.publicID))
        }
        #expect(!endedFirst, "the fine items' cards came only with the batch's end: \(listed)")
        #expect(listed == Set(fine.map(\.publicID)))
        server.close()
        finished.wait()
        let cards = CardFile.read(cardFile).cards
        #expect(cards.first { $0.publicID == "stuck" }?.status == .failed)
    }

    @Test("an item's time limit counts from its start, the version check of a URL included")
    func timeLimitIncludesVersionCheck() throws {
        // The rule: what an item gets is its limit less what it already spent (a version check's HEAD), never the
        // whole limit again. `ItemDeadline` is given the item's start, taken before the version check.
        let spent = ItemDeadline(limit: 10, started: Date(timeIntervalSinceNow: -4), options: OpenOptions())
        defer { spent.finish() }
        #expect(try #require(spent.options.itemTimeLimit) <= 6)
        #expect(try #require(spent.options.openTimeout) <= 6 && (spent.options.readTimeout ?? 0) <= 6)
        // A limit used up before the open leaves nothing: the open fails as out of time.
        let over = ItemDeadline(limit: 1, started: Date(timeIntervalSinceNow: -2), options: OpenOptions())
        defer { over.finish() }
        #expect(try #require(over.options.itemTimeLimit) <= 0.001)
        // End to end: a URL that never answers, its HEAD and open under one limit, fails as timed out, named.
        let server = try SilentServer()
        let stuck = FeedItem(publicID: "stuck", createdAt: Date(),
                             source: URL(string: "http://127.0.0.1:\(server.port)/clip.mp4")!)
        let out = try TestFixtures.temporaryFolder("thumbs-limit")
        let summary = try ThumbnailBatch(feed: [stuck], configuration: .init(output: out, jobs: 1, timeLimit: 1)).run()
        let failure = try #require(summary.failures.first)
        guard case .timedOut(let item, _) = failure else {
            Issue.record("expected a time-out, got \(failure)")
            return
        }
        #expect(item == "stuck")
    }

    @Test("a 1x16384 picture becomes a thumbnail no taller than 4 times its box, not a strip of a million rows")
    func extremeAspect() throws {
        let folder = try TestFixtures.temporaryFolder("thumbs-tall")
        let png = folder.appendingPathComponent("tall.png")
        let column = Image(width: 1, height: 16384, pixelFormat: .rgb24,
                           bytes: [UInt8](repeating: 200, count: 16384 * 3))
        try ImageEncoder(format: .png).write(column, to: png.path)
        let fitted = try #require(try ThumbnailRenderer(options: ThumbnailOptions()).render(path: png.path).images.first)
        #expect(fitted.height == 320 * ThumbnailRenderer.maxAspect && fitted.width == 1, "\(fitted.width)x\(fitted.height)")
        // A square stays a square of the asked side.
        let square = try #require(try ThumbnailRenderer(options: ThumbnailOptions(square: true)).render(path: png.path)
            .images.first)
        #expect(square.width == 320 && square.height == 320, "\(square.width)x\(square.height)")
    }

    /// GIVEN one output folder shared by shards (a volume two pods mount) holding temporaries that killed or live
    /// writers left — an image of each item and each shard's card file, all with a process id this machine does not
    /// have — WHEN shard 0 of 2 runs THEN it removes its own items' and card file's temporaries and none of shard 1's.
    @Test("a thumbs shard removes only its own items' temporaries, never another shard's on a shared folder")
    func shardTemporaries() throws {
        let out = try TestFixtures.temporaryFolder("thumbs-shard-tmp")
        let names = ["hevc.mp4", "vp9.webm", "av1.mp4", "h264_portrait.mp4", "rotate90.mp4", "image.png"]
        let items = names.map {
            FeedItem(publicID: ($0 as NSString).deletingPathExtension, createdAt: Date(),
                     source: URL(fileURLWithPath: TestFixtures.media($0)))
        }
        let half0 = Shard(index: 0, count: 2)!
        let mine = items.filter { half0.contains($0.publicID) }.map(\.publicID)
        let theirs = items.filter { !half0.contains($0.publicID) }.map(\.publicID)
        #expect(!mine.isEmpty && !theirs.isEmpty)
        let foreign = "4194400"  // above Linux's largest pid_max: a writer on another host, as seen from here
        func temporary(_ name: String) -> URL { out.appendingPathComponent(".\(name).tmp-\(foreign)-3") }
        for id in mine + theirs { try Data("x".utf8).write(to: temporary("\(id).jpg")) }
        try Data("x".utf8).write(to: temporary("cards-0-of-2.jsonl"))
        try Data("x".utf8).write(to: temporary("cards-1-of-2.jsonl"))

        let summary = try ThumbnailBatch(feed: items, configuration: .init(output: out, jobs: 2, shard: half0)).run()
        #expect(summary.rendered == mine.count && summary.failures.isEmpty)
        let exists = { (url: URL) in FileManager.default.fileExists(atPath: url.path) }
        for id in mine { #expect(!exists(temporary("\(id).jpg")), "\(id)") }
        #expect(!exists(temporary("cards-0-of-2.jsonl")))
        for id in theirs { #expect(exists(temporary("\(id).jpg")), "\(id)") }
        #expect(exists(temporary("cards-1-of-2.jsonl")))
    }
}
