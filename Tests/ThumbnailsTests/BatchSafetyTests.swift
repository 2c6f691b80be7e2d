import Feed
import Foundation
import Media
import TestSupport
import Testing
@testable import Thumbnails

/// The batch's own guards (issue 14): one run per card file, a card file that trails finished items by about a
/// second even while a worker is stuck, and pictures of extreme shape clamped to the box.
@Suite struct BatchSafetyTests {
    @Test("a second run into the same card file is refused while the first holds it; a dead holder's lock is taken over")
    func lock() throws {
        let out = try TestFixtures.temporaryFolder("thumbs-lock")
        let item = FeedItem(publicID: "fine", createdAt: Date(), source: URL(fileURLWithPath: TestFixtures.media("hevc.mp4")))
        let batch = ThumbnailBatch(feed: [item], configuration: .init(output: out, jobs: 1))
        let held = try OutputLock(for: out.appendingPathComponent("cards.jsonl"))
        #expect {
            _ = try batch.run()
        } throws: { error in
            (error as? MediaError)?.message.contains("process \(getpid())") == true
        }
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("fine.jpg").path))
        // Another shard's card file has its own lock.
        let shard = ThumbnailBatch(feed: [item], configuration: .init(output: out, jobs: 1, shard: Shard(index: 0, count: 2)!))
        #expect(throws: Never.self) { _ = try shard.run() }
        held.release()
        // Released (as the kernel does when a holder dies): the next run goes ahead.
        let summary = try batch.run()
        #expect(summary.failures.isEmpty && summary.rendered == 1)
    }

    @Test("cards of finished items reach the card file within about a second while another item is stuck",
          .timeLimit(.minutes(1)))
    func cardLag() async throws {
        let server = try SilentServer()
        let stuck = FeedItem(publicID: "stuck", createdAt: Date(),
                             source: URL(string: "http://127.0.0.1:\(server.port)/clip.mp4")!)
        let fine = ["hevc.mp4", "vp9.webm", "av1.mp4"].map {
            FeedItem(publicID: $0, createdAt: Date(), source: URL(fileURLWithPath: TestFixtures.media($0)))
        }
        let out = try TestFixtures.temporaryFolder("thumbs-lag")
        let batch = ThumbnailBatch(feed: [stuck] + fine, configuration: .init(output: out, jobs: 2, timeLimit: 8))
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? batch.run()
            finished.signal()
        }
        // The fine items take well under a second together; the stuck one holds its worker for 8 s.
        try await Task.sleep(nanoseconds: 4_000_000_000)
        let cards = CardFile.read(out.appendingPathComponent("cards.jsonl")).cards
        #expect(Set(cards.map(\.publicID)) == Set(fine.map(\.publicID)), "\(cards.map(\.publicID))")
        finished.wait()
    }

    @Test("a 1x16384 picture becomes a thumbnail no taller than 4 times its box, not a strip of a million rows")
    func extremeAspect() throws {
        let folder = try TestFixtures.temporaryFolder("thumbs-tall")
        let png = folder.appendingPathComponent("tall.png")
        let column = Image(width: 1, height: 16384, pixelFormat: .rgb24,
                           bytes: [UInt8](repeating: 200, count: 16384 * 3))
        try ImageEncoder(format: .png).write(column, to: png.path)
        for square in [false, true] {
            let rendered = try ThumbnailRenderer(options: ThumbnailOptions(square: square)).render(path: png.path)
            let image = try #require(rendered.images.first)
            #expect(image.height <= 320 * ThumbnailRenderer.maxAspect && image.width <= 320, "\(image.width)x\(image.height)")
        }
    }
}
