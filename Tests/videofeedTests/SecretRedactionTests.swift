import Foundation
import TestSupport
import Testing

/// Issue 13 item 4: a signed URL's secrets never reach what the CLI prints or records, unless the operator asks
/// (`--record-source-secrets`). Each command runs as the built binary over an unreachable signed URL (nothing listens
/// on port 9) and, for `thumbs`, a reachable one served from the fixtures.
@Suite struct SecretRedactionTests {
    let cli = TestFixtures.cli
    static let signature = "SIGabc123secret"
    static let token = "TOKxyz789secret"
    static let password = "PWDhunter2secret"
    /// Nothing listens on port 9: every open fails at once.
    static let unreachable = "http://127.0.0.1:9/clip.mp4?X-Amz-Signature=\(signature)&token=\(token)"

    /// Whether `text` holds none of the secrets.
    func clean(_ text: String) -> Bool {
        ![Self.signature, Self.token, Self.password].contains(where: text.contains)
    }

    func manifest(_ entries: [(String, String)], in folder: URL) throws -> String {
        let objects = entries.map { ["public_id": $0.0, "created_at": "2024-05-01T10:00:00Z", "url": $0.1] }
        let path = folder.appendingPathComponent("feed.json")
        try JSONSerialization.data(withJSONObject: objects).write(to: path)
        return path.path
    }

    @Test("probe names a signed URL redacted in its error line and its JSON")
    func probe() throws {
        let userinfo = "http://user:\(Self.password)@127.0.0.1:9/clip.mp4?X-Goog-Signature=\(Self.signature)"
        let text = try run(cli, ["probe", "--timeout", "5", Self.unreachable, userinfo])
        #expect(text.status == 1)
        #expect(clean(text.stdout + text.stderr), "\(text.stderr)")
        #expect(text.stderr.contains("http://127.0.0.1:9/clip.mp4?X-Amz-Signature=REDACTED&token=REDACTED: open failed"),
                "\(text.stderr)")
        #expect(text.stderr.contains("http://127.0.0.1:9/clip.mp4?X-Goog-Signature=REDACTED: open failed"),
                "\(text.stderr)")
        let json = try run(cli, ["probe", "--json", "--timeout", "5", Self.unreachable])
        #expect(json.status == 1)
        #expect(clean(json.stdout + json.stderr), "\(json.stdout)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(entries.first?["item"] as? String == "http://127.0.0.1:9/clip.mp4?X-Amz-Signature=REDACTED&token=REDACTED")
    }

    @Test("thumbs: no secret in cards or errors; a rerun skips the unchanged item; --record-source-secrets keeps it",
          .timeLimit(.minutes(2)))
    func thumbs() throws {
        let folder = try TestFixtures.temporaryFolder("secrets-thumbs")
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try StaticHTTPServer(folder: TestFixtures.folder.appendingPathComponent("media").path)
        // http.server ignores the query and the user info: the signed URL serves the fixture.
        let signed = "http://user:\(Self.password)@127.0.0.1:\(server.port)/hevc.mp4"
            + "?X-Amz-Credential=AKIA&X-Amz-Signature=\(Self.signature)&token=\(Self.token)"
        let feed = try manifest([("good", signed), ("dead", Self.unreachable)], in: folder)
        let out = folder.appendingPathComponent("out")
        let cards = out.appendingPathComponent("cards.jsonl")
        let arguments = ["thumbs", feed, "--out", out.path, "--time-limit", "20", "--json", "-q"]

        let first = try run(cli, arguments)
        #expect(first.status == 1, "\(first.stderr)")
        #expect(clean(first.stdout + first.stderr), "\(first.stderr)")
        let text = try String(contentsOf: cards, encoding: .utf8)
        #expect(clean(text), "\(text)")
        let byID = try cardsByID(text)
        #expect(byID["good"]?["status"] as? String == "ok")
        #expect(byID["good"]?["source"] as? String == "http://127.0.0.1:\(server.port)/hevc.mp4"
            + "?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&token=REDACTED")
        #expect(byID["dead"]?["status"] as? String == "failed")
        #expect((byID["dead"]?["error"] as? String)?.contains("X-Amz-Signature=REDACTED&token=REDACTED") == true)

        // Cards are matched by public_id and source stamp, never by the (redacted) source text.
        let again = try run(cli, arguments)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])
        #expect(summary["skipped"] as? Int == 1, "\(again.stdout) \(again.stderr)")

        let kept = try run(cli, arguments + ["--record-source-secrets", "--force"])
        #expect(kept.status == 1, "\(kept.stderr)")
        #expect(clean(kept.stderr), "\(kept.stderr)")
        let whole = try cardsByID(try String(contentsOf: cards, encoding: .utf8))
        #expect(whole["good"]?["source"] as? String == signed)
        #expect(whole["dead"]?["source"] as? String == Self.unreachable)
        let error = try #require(whole["dead"]?["error"] as? String)
        #expect(clean(error), "errors stay redacted: \(error)")
    }

    @Test("transcode records a failing signed URL redacted, or whole with --record-source-secrets")
    func transcode() throws {
        let folder = try TestFixtures.temporaryFolder("secrets-transcode")
        defer { try? FileManager.default.removeItem(at: folder) }
        let feed = try manifest([("dead", Self.unreachable)], in: folder)
        let out = folder.appendingPathComponent("out")
        let result = try run(cli, ["transcode", feed, "--out", out.path, "--time-limit", "20", "-q"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(clean(result.stdout + result.stderr), "\(result.stderr)")
        let records = try String(contentsOf: out.appendingPathComponent("renditions.jsonl"), encoding: .utf8)
        #expect(clean(records), "\(records)")
        #expect(records.contains(#""source":"http:\/\/127.0.0.1:9\/clip.mp4?X-Amz-Signature=REDACTED&token=REDACTED""#)
                || records.contains(#""source":"http://127.0.0.1:9/clip.mp4?X-Amz-Signature=REDACTED&token=REDACTED""#),
                "\(records)")
        let kept = try run(cli, ["transcode", feed, "--out", out.path, "--time-limit", "20", "-q",
                                 "--record-source-secrets", "--force"])
        #expect(kept.status == 1)
        let whole = try String(contentsOf: out.appendingPathComponent("renditions.jsonl"), encoding: .utf8)
        #expect(whole.contains(Self.signature) && whole.contains(Self.token), "\(whole)")
    }

    @Test("play names a failing signed URL redacted in its swipe records and on stderr")
    func play() throws {
        let folder = try TestFixtures.temporaryFolder("secrets-play")
        defer { try? FileManager.default.removeItem(at: folder) }
        let feed = try manifest([("good", TestFixtures.media("hevc.mp4")), ("dead", Self.unreachable)], in: folder)
        let result = try run(cli, ["play", feed, "--swipes", "n", "--dwell-ms", "1", "--size", "90x160", "--json"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(clean(result.stdout + result.stderr), "\(result.stdout) \(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let swipe = try #require((report["swipes"] as? [[String: Any]])?.first)
        #expect((swipe["result"] as? String)?.contains("X-Amz-Signature=REDACTED&token=REDACTED") == true, "\(swipe)")
    }

    private func cardsByID(_ text: String) throws -> [String: [String: Any]] {
        var cards: [String: [String: Any]] = [:]
        for line in text.split(separator: "\n") {
            let card = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            cards[card["public_id"] as? String ?? ""] = card
        }
        return cards
    }
}
