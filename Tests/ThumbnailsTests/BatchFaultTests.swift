import Feed
import Foundation
import Media
import TestSupport
import Testing
@testable import Thumbnails

/// A batch over a misbehaving server: the faulty items fail with typed errors (the stalled and endless ones by the item
/// time limit), and the other items are rendered.
@Suite struct BatchFaultTests {
    @Test("stalled, reset, endless and redirected items fail; the good ones render", .timeLimit(.minutes(2)))
    func faults() throws {
        let server = try FaultHTTPServer(folder: TestFixtures.folder.appendingPathComponent("media").path)
        let secret = TestFixtures.folder.appendingPathComponent("hostile/secret.txt").path
        let sources: [(String, String)] = [
            ("good-local", URL(fileURLWithPath: TestFixtures.media("hevc.mp4")).absoluteString),
            ("stall", server.url("stall", "h264_portrait.mp4")),
            ("reset", server.url("reset", "h264_portrait.mp4")),
            ("endless", server.url("endless", "clip.mp4")),
            ("redirect", server.redirectToFile(secret)),
            ("good-remote", server.url("ok", "vp9.webm")),
        ]
        let items = sources.enumerated().map { offset, entry in
            FeedItem(publicID: entry.0, createdAt: Date(timeIntervalSince1970: Double(1000 - offset)),
                     source: URL(string: entry.1)!)
        }
        let out = try TestFixtures.temporaryFolder("batch-faults")
        let configuration = ThumbnailBatch.Configuration(output: out, jobs: 2, timeLimit: 3)
        let summary = try ThumbnailBatch(feed: items, configuration: configuration).run()
        #expect(summary.items == 6)
        #expect(summary.failures.count == 4)
        let cards = Dictionary(uniqueKeysWithValues: CardFile.read(out.appendingPathComponent("cards.jsonl")).cards
            .map { ($0.publicID, $0) })
        #expect(cards["good-local"]?.status == .ok)
        #expect(cards["good-remote"]?.status == .ok)
        for id in ["stall", "reset", "endless", "redirect"] {
            #expect(cards[id]?.status == .failed, "\(id)")
            #expect(cards[id]?.thumbnails.isEmpty == true, "\(id)")
        }
        #expect(cards["stall"]?.error?.contains("time limit") == true, "\(cards["stall"]?.error ?? "")")
        #expect(cards["reset"]?.error?.contains("I/O error") == true, "\(cards["reset"]?.error ?? "")")
        #expect(cards["endless"]?.error?.contains("time limit") == true, "\(cards["endless"]?.error ?? "")")
        #expect(cards["redirect"]?.error?.contains("VFE-HOSTILE-SECRET") == false)
    }
}
