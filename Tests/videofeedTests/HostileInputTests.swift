import Foundation
import TestSupport
import Testing

/// Hostile playlists through every command that opens media: a policy error naming the item, the other items go
/// on, and the local file's bytes (a unique marker) appear in no output — stdout, stderr, images or cards.
@Suite struct HostileInputTests {
    let cli = TestFixtures.cli
    static let marker = "VFE-HOSTILE-SECRET-5f1c2a9e"
    static let playlists = ["local_read.m3u8", "local_read.ffconcat"].map {
        TestFixtures.folder.appendingPathComponent("hostile/\($0)").path
    }

    /// Every byte of every file under `folder` (recursively), for the marker search.
    func allBytes(under folder: URL) throws -> Data {
        var bytes = Data()
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), !isFolder.boolValue {
                bytes.append(try Data(contentsOf: url))
            }
        }
        return bytes
    }

    func expectNoMarker(_ result: RunResult, _ folder: URL? = nil) throws {
        #expect(!result.stdout.contains(Self.marker) && !result.stderr.contains(Self.marker))
        if let folder { #expect(try allBytes(under: folder).range(of: Data(Self.marker.utf8)) == nil) }
    }

    @Test("probe refuses each playlist with a policy error and still reports the good input")
    func probe() throws {
        let result = try run(cli, ["probe", "--json"] + Self.playlists + [TestFixtures.media("hevc.mp4")])
        #expect(result.status != 0)
        #expect(result.stdout.components(separatedBy: "policyViolation").count - 1 == 2, "\(result.stdout)")
        #expect(result.stdout.contains("\"hevc\""), "\(result.stdout)")
        try expectNoMarker(result)
    }

    @Test("dump refuses each playlist and writes nothing", arguments: HostileInputTests.playlists)
    func dump(playlist: String) throws {
        let out = try TestFixtures.temporaryFolder("hostile-dump")
        let result = try run(cli, ["dump", playlist, "--format", "png", "--out", out.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("refused by policy") && result.stderr.contains(playlist), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty)
        try expectNoMarker(result, out)
    }

    @Test("a thumbnail batch fails the playlists with policy errors in their cards and renders the rest")
    func thumbs() throws {
        let folder = try TestFixtures.temporaryFolder("hostile-thumbs")
        let manifest = folder.appendingPathComponent("feed.json")
        let sources = Self.playlists + [TestFixtures.media("hevc.mp4"), TestFixtures.media("vp9.webm")]
        let entries = sources.enumerated().map {
            "{\"public_id\": \"h\($0.offset)\", \"created_at\": \"2026-01-0\($0.offset + 1)T00:00:00Z\", \"url\": \"\($0.element)\"}"
        }
        try Data("[\(entries.joined(separator: ","))]".utf8).write(to: manifest)
        let out = folder.appendingPathComponent("out")
        let result = try run(cli, ["thumbs", manifest.path, "--out", out.path, "--quiet", "--no-cache"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.contains("4 items") && result.stdout.contains(" 2 failed"), "\(result.stdout)")
        let cards = try String(contentsOf: out.appendingPathComponent("cards.jsonl"), encoding: .utf8)
        #expect(cards.components(separatedBy: "refused by policy").count - 1 == 2, "\(cards)")
        try expectNoMarker(result, out)
    }

    @Test("--allow-playlists lets a local playlist through the format check")
    func optIn() throws {
        let refused = try run(cli, ["probe", Self.playlists[1]])
        #expect(refused.stderr.contains("refused by policy"))
        let allowed = try run(cli, ["probe", "--json", "--allow-playlists", Self.playlists[1]])
        #expect(!allowed.stderr.contains("refused by policy"), "\(allowed.stderr)")
        // Past the format check, to the demuxer: FFmpeg's concat demuxer itself refuses the entry that leaves the
        // folder (its `safe` rule), an item error (exit 1), not a usage error (exit 2) and not the policy.
        #expect(allowed.status == 1, "\(allowed.stderr)")
        #expect(allowed.stdout.contains("Unsafe file name"), "\(allowed.stdout)\n\(allowed.stderr)")
        try expectNoMarker(allowed)
    }
}
