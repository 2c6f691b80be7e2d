import Foundation
import TestSupport
import Testing

/// A small version of the swipe soak in docs/reliability.md: random swipes over a feed with corrupt, missing and
/// hostile items. It measures memory, so `make test` runs it alone (VIDEOFEED_ISOLATED=1); `make test-sanitizers`
/// runs it with the AddressSanitizer build of the CLI, whose LeakSanitizer fails the run on a leak at exit.
@Suite(.enabled(if: isolatedRun, "memory test: runs alone under make test"))
struct SoakTests {
    @Test("600 random swipes over Fixtures/soak-feed.json: no crash, every swipe a hit or a miss, flat memory")
    func soak() throws {
        let result = try run(TestFixtures.cli, [
            "play", TestFixtures.folder.appendingPathComponent("soak-feed.json").path, "--random", "600",
            "--seed", "1", "--wrap", "--dwell-ms", "1-5", "--size", "90x160", "--json",
        ])
        // Exit 1: the feed's unplayable items failed (named on stderr); the soak itself went through.
        #expect(result.status == 1, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let metrics = try #require(report["metrics"] as? [String: Any])
        let swipes = try #require(metrics["swipes"] as? Int)
        #expect(swipes == 600)
        #expect((metrics["hits"] as? Int ?? -1) + (metrics["misses"] as? Int ?? -1) == swipes)
        // The feed holds 7 items that cannot play (of 22): failures are seen and do not stop the run.
        #expect((metrics["failures"] as? Int ?? 0) > 0)
        let records = try #require(report["swipes"] as? [[String: Any]])
        #expect(records.count == 600)
        let memory = try #require(report["memory"] as? [String: Any])
        let growth = try #require(memory["growthSince100Swipes"] as? Int)
        if !sanitizerRun { #expect(growth < 20 * 1024 * 1024, "resident memory grew \(growth) bytes after swipe 100") }
    }
}
