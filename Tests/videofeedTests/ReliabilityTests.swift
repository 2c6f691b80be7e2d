import Foundation
import Media
import TestSupport
import Testing

/// Reliability round two (issue 14): what a hostile uploader and a bad day did to the batch tools, each held by the
/// built binary's behaviour: files outside OUT, deleted outputs, exit statuses and messages.
@Suite struct ReliabilityTests {
    let cli = TestFixtures.cli
    static let marker = "VFE-HOSTILE-SECRET-5f1c2a9e"

    func write(_ text: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    /// A native manifest of `(public_id, path)` entries.
    func manifest(_ entries: [(String, String)]) throws -> String {
        let objects = entries.map { ["public_id": $0.0, "created_at": "2024-05-01T10:00:00Z", "url": $0.1] }
        return String(decoding: try JSONSerialization.data(withJSONObject: objects), as: UTF8.self)
    }

    func files(under folder: URL) -> [String] {
        let walker = FileManager.default.enumerator(atPath: folder.path)
        return (walker?.allObjects as? [String] ?? []).sorted()
    }

    // 1. demo writes anywhere

    @Test("demo keeps a hostile public_id inside --out, as thumbs does")
    func demoPaths() throws {
        let root = try TestFixtures.temporaryFolder("rel-demo")
        let work = root.appendingPathComponent("a/b/c")
        let feed = work.appendingPathComponent("feed.json")
        try write(try manifest([("../../../x", TestFixtures.media("hevc.mp4")),
                                ("/abs/y", TestFixtures.media("hevc.mp4"))]), to: feed)
        let out = work.appendingPathComponent("out")
        let result = try run(cli, ["demo", "--feed", feed.path, "--out", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("x.json").path))
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("a/x.json").path))
        let written = files(under: out)
        #expect(written.contains { $0.hasPrefix("x~") && $0.hasSuffix(".json") }, "\(written)")
        #expect(written.contains { $0.hasPrefix("abs/y~") && $0.hasSuffix("-000001.png") }, "\(written)")
        #expect(files(under: root).allSatisfy { $0.hasPrefix("a") }, "\(files(under: root))")
    }

    // 2. a dead listing deletes real thumbnails

    @Test("thumbs over a dead listing with no cache ends with exit 2 and changes nothing in OUT")
    func deadListing() throws {
        let folder = try TestFixtures.temporaryFolder("rel-dead")
        let source = folder.appendingPathComponent("real")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestFixtures.media("hevc.mp4"),
                                         toPath: source.appendingPathComponent("real_clip.mp4").path)
        let out = folder.appendingPathComponent("out")
        let first = try run(cli, ["thumbs", source.path, "--out", out.path, "-q"])
        #expect(first.status == 0, "\(first.stderr)")
        let before = files(under: out)
        #expect(before.contains("real_clip.jpg"))
        let cards = try Data(contentsOf: out.appendingPathComponent("cards.jsonl"))

        // The bundled feed is right there (--fixtures), as it is near the binary on a real pod.
        let dead = try run(cli, ["thumbs", "http://127.0.0.1:9/listing.json", "--no-cache", "--timeout", "2",
                                 "--retries", "0", "--fixtures", TestFixtures.folder.path, "--out", out.path, "-q"])
        #expect(dead.status == 2, "\(dead.stdout) \(dead.stderr)")
        #expect(dead.stderr.contains("cannot read the feed") && dead.stderr.contains("nothing in the output folder"),
                "\(dead.stderr)")
        #expect(files(under: out).filter { !$0.hasPrefix(".") } == before.filter { !$0.hasPrefix(".") })
        #expect(try Data(contentsOf: out.appendingPathComponent("cards.jsonl")) == cards)

        // Asked for explicitly, the bundled feed is used, with a loud warning.
        let asked = try run(cli, ["thumbs", "http://127.0.0.1:9/listing.json", "--no-cache", "--timeout", "2",
                                  "--retries", "0", "--fixtures", TestFixtures.folder.path, "--fallback-bundled",
                                  "--out", folder.appendingPathComponent("out2").path, "-q"])
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.stderr.contains("WARNING") && asked.stderr.contains("bundled feed"), "\(asked.stderr)")
    }

    @Test("a listing that answers but is empty or unreadable never removes the last run's thumbnails")
    func unusableListing() throws {
        let folder = try TestFixtures.temporaryFolder("rel-unusable")
        let feed = folder.appendingPathComponent("feed.json")
        let out = folder.appendingPathComponent("out")
        try write(try manifest([("a", TestFixtures.media("hevc.mp4")), ("b", TestFixtures.media("vp9.webm"))]), to: feed)
        #expect(try run(cli, ["thumbs", feed.path, "--out", out.path, "-q"]).status == 0)
        let before = files(under: out).filter { !$0.hasPrefix(".") }
        #expect(before.contains("a.jpg") && before.contains("b.jpg"))

        for listing in ["[]", #"[{"public_id": "a"}, {"public_id": "b", "created_at": "yesterday"}]"#] {
            try write(listing, to: feed)
            let result = try run(cli, ["thumbs", feed.path, "--out", out.path, "-q"])
            #expect(result.status == 2, "\(listing): \(result.stderr)")
            #expect(result.stderr.contains("refusing to remove the 2 items of the last run"), "\(result.stderr)")
            #expect(files(under: out).filter { !$0.hasPrefix(".") } == before)
        }
        // One entry readable, the other broken: the broken one may be b, so b's thumbnail and card stay.
        try write(#"[{"public_id": "a", "created_at": "2024-05-01T10:00:00Z", "url": "\#(TestFixtures.media("hevc.mp4"))"}, "#
                  + #"{"public_id": "b", "created_at": "yesterday"}]"#, to: feed)
        let partial = try run(cli, ["thumbs", feed.path, "--out", out.path, "-q"])
        #expect(partial.status == 1)
        #expect(partial.stderr.contains("1 items of the last run are not in this feed"), "\(partial.stderr)")
        #expect(files(under: out).contains("b.jpg"))
        #expect(try String(contentsOf: out.appendingPathComponent("cards.jsonl"), encoding: .utf8).contains(#""public_id":"b""#))
    }

    @Test("a duplicate entry does not stop the removal of a gone item; --allow-empty-feed lets a feed empty out")
    func removalStillWorks() throws {
        let folder = try TestFixtures.temporaryFolder("rel-dup")
        let media = folder.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        for (from, to) in [(TestFixtures.media("hevc.mp4"), "a.mp4"), (TestFixtures.media("vp9.webm"), "b.webm"),
                           (TestFixtures.media("image.png"), "pic.png"), (TestFixtures.media("image.jpg"), "pic.jpg")] {
            try FileManager.default.copyItem(atPath: from, toPath: media.appendingPathComponent(to).path)
        }
        let out = folder.appendingPathComponent("out")
        let first = try run(cli, ["thumbs", media.path, "--out", out.path, "-q"])
        #expect(first.status == 1 && first.stderr.contains("same public_id"), "\(first.stderr)")  // pic twice
        try FileManager.default.removeItem(at: media.appendingPathComponent("b.webm"))
        let second = try run(cli, ["thumbs", media.path, "--out", out.path, "-q"])
        #expect(second.stdout.contains("1 removed"), "\(second.stdout) \(second.stderr)")
        #expect(!files(under: out).contains("b.jpg") && files(under: out).contains("a.jpg"))

        let empty = folder.appendingPathComponent("empty.json")
        try write("[]", to: empty)
        let allowed = try run(cli, ["thumbs", empty.path, "--out", out.path, "--allow-empty-feed", "-q"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(!files(under: out).contains { $0.hasSuffix(".jpg") }, "\(files(under: out))")
    }

    @Test("play warns loudly when it falls back to the bundled feed")
    func playWarns() throws {
        let result = try run(cli, ["play", "http://127.0.0.1:9/listing.json", "--no-cache", "--timeout", "2",
                                   "--retries", "0", "--fixtures", TestFixtures.folder.path, "--swipes", "n",
                                   "--dwell-ms", "1", "--size", "90x160"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("WARNING") && result.stderr.contains("not the feed asked for"), "\(result.stderr)")
    }

    // 3. symlinks inside the output folder

    @Test("thumbs neither writes nor deletes through a symbolic link leading out of OUT")
    func symlinks() throws {
        let folder = try TestFixtures.temporaryFolder("rel-link")
        let elsewhere = folder.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try write("precious", to: elsewhere.appendingPathComponent("victim.jpg"))
        let out = folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent("lnk").path,
                                                   withDestinationPath: "../elsewhere")
        // A forged card from an earlier run names a file through the link; its item is gone from the feed now.
        try write(#"{"public_id":"gone","created_at":"2024-05-01T10:00:00Z","thumbnails":["lnk/victim.jpg"],"#
                  + #""source":"x","status":"ok","options":"-"}"# + "\n", to: out.appendingPathComponent("cards.jsonl"))
        let feed = folder.appendingPathComponent("feed.json")
        try write(try manifest([("lnk/new", TestFixtures.media("hevc.mp4")),
                                ("fine", TestFixtures.media("hevc.mp4"))]), to: feed)
        let result = try run(cli, ["thumbs", feed.path, "--out", out.path, "-q"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("lnk/new") && result.stderr.contains("symbolic link"), "\(result.stderr)")
        #expect(files(under: elsewhere) == ["victim.jpg"])
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("fine.jpg").path))
    }

    // 4. memory bombs

    @Test("a listing larger than --max-listing-size is cut off, not held", .timeLimit(.minutes(1)))
    func endlessListing() throws {
        let server = try FaultHTTPServer(folder: TestFixtures.folder.path)
        let result = try run(cli, ["feed", server.url("endless", "feed.json"), "--no-cache", "--no-fallback",
                                   "--max-listing-size", "1MiB", "--retries", "0"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("larger than the limit of 1048576 bytes"), "\(result.stderr)")
    }

    /// Every sample-table bomb of Fixtures/hostile (make-index-bomb.py): each took 2.1–4 GB before the scan.
    static let bombs = ["index_bomb.mp4", "index_bomb_frag.mp4", "index_bomb_multi.mp4", "index_bomb_sound.mp4",
                        "index_bomb_udta.mp4", "index_bomb_hoov.mp4", "index_bomb_chunks.mp4", "index_bomb_cmov.mp4"]

    /// What refuses `name` before the demuxer reads its tables.
    static func refusal(_ name: String) -> (kind: String, text: String) {
        name.contains("cmov") ? ("policyViolation", "a compressed movie header (cmov")
            : ("limitExceeded", "the sample tables claim")
    }

    @Test("probe refuses sample-table bombs before the demuxer indexes them", arguments: bombs)
    func indexBomb(name: String) throws {
        let path = TestFixtures.folder.appendingPathComponent("hostile/\(name)").path
        let result = try run(cli, ["probe", "--json", path])
        #expect(result.status == 1)
        let expected = Self.refusal(name)
        #expect(result.stdout.contains(expected.kind) && result.stderr.contains(expected.text), "\(result.stderr)")
    }

    @Test("the bombs over HTTP are refused by the same scan, through range requests", .timeLimit(.minutes(1)))
    func indexBombRemote() throws {
        // FaultHTTPServer's /ok/ path honours Range, as CDNs do (Python's http.server does not).
        let server = try FaultHTTPServer(folder: TestFixtures.folder.appendingPathComponent("hostile").path)
        let result = try run(cli, ["probe"] + Self.bombs.map { server.url("ok", $0) })
        #expect(result.status == 1)
        for name in Self.bombs {
            let line = result.stderr.split(separator: "\n").first { $0.contains("/ok/\(name):") } ?? ""
            #expect(line.contains(Self.refusal(name).text), "\(name): \(result.stderr)")
        }
    }

    @Test("the same bombs in memory (MediaFile(data:), the fuzz target's path) fail with limitExceeded",
          arguments: bombs)
    func indexBombInMemory(name: String) throws {
        let data = try Data(contentsOf: TestFixtures.folder.appendingPathComponent("hostile/\(name)"))
        #expect {
            _ = try MediaFile(data: data, name: name)
        } throws: { error in
            (error as? MediaError)?.kind.rawValue == Self.refusal(name).kind
        }
    }

    // 5. text files become pictures; 6. hangs and crashes

    @Test("text files are refused by every command that opens media; the secret never shows")
    func textFiles() throws {
        let folder = try TestFixtures.temporaryFolder("rel-text")
        let secret = try String(contentsOfFile: TestFixtures.folder.appendingPathComponent("hostile/secret.txt").path,
                                encoding: .utf8)
        for name in ["passwd.txt", "notes.nfo", "art.ans"] {
            try write(secret, to: folder.appendingPathComponent(name))
        }
        let feed = folder.appendingPathComponent("feed.json")
        try write(try manifest(["passwd.txt", "notes.nfo", "art.ans"].map { ($0, folder.appendingPathComponent($0).path) }),
                  to: feed)
        let out = folder.appendingPathComponent("out")
        let thumbs = try run(cli, ["thumbs", feed.path, "--out", out.path, "-q"])
        #expect(thumbs.status == 1)
        #expect(!files(under: out).contains { $0.hasSuffix(".jpg") }, "\(files(under: out))")
        let probe = try run(cli, ["probe", folder.appendingPathComponent("notes.nfo").path,
                                  folder.appendingPathComponent("art.ans").path])
        #expect(probe.status == 1)
        #expect(probe.stderr.contains("turns text into pictures"), "\(probe.stderr)")
        #expect(!thumbs.stderr.contains(Self.marker) && !probe.stdout.contains(Self.marker))
    }

    @Test("a named pipe is refused at once, not waited on", .timeLimit(.minutes(1)))
    func fifo() throws {
        let folder = try TestFixtures.temporaryFolder("rel-fifo")
        let pipe = folder.appendingPathComponent("clip.mp4").path
        #expect(mkfifo(pipe, 0o600) == 0)
        let result = try run(cli, ["probe", "--timeout", "1", pipe])
        #expect(result.status == 1)
        #expect(result.stderr.contains("named pipe (FIFO), not a regular file"), "\(result.stderr)")
    }

    @Test("out-of-range numbers are usage errors (exit 2), never a crash", arguments: [
        ["thumbs", "--at", "1e19s", "--out", "OUT"], ["thumbs", "--time-limit", "2e10", "--out", "OUT"],
        ["probe", "--timeout", "1e300", "X"], ["dump", "--start", "1e19", "X"], ["feed", "--timeout", "1e300"],
        ["dump", "--threads", "100000", "X"], ["thumbs", "--jobs", "100000", "--out", "OUT"],
        ["play", "--budget", "1e300GiB"], ["play", "--dwell-ms", "0-9223372036854775807"],
        ["play", "--workers", "100000"],
    ])
    func numbers(arguments: [String]) throws {
        let result = try run(cli, arguments)
        #expect(result.status == 2, "\(arguments): \(result.status) \(result.stderr)")
        #expect(result.stderr.contains("Error:"), "\(result.stderr)")
    }

    @Test("a stream that grows past the size limit midway fails with limitExceeded instead of losing frames")
    func growsMidway() throws {
        var options = OpenOptions()
        options.maxPixelCount = 64 * 64
        let file = try MediaFile(path: TestFixtures.bad("grows_midway.h264"), options: options)
        // One thread: with frame threading the frames before the growth may still be in flight when it is found.
        let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: 1))
        var frames = 0
        #expect {
            while try decoder.nextFrame() != nil { frames += 1 }
        } throws: { error in
            (error as? MediaError)?.kind == .limitExceeded
        }
        #expect(frames == 3)
    }

    // 7. concurrent runs and merges

    @Test("merge refuses mixed, impossible and incomplete shard sets", arguments: [
        (["cards-0-of-2.jsonl", "cards-1-of-2.jsonl", "cards-0-of-3.jsonl"], "different shardings"),
        (["cards-0-of-2.jsonl", "cards-5-of-2.jsonl"], "possible shard"),
        (["cards-0-of-3.jsonl", "cards-2-of-3.jsonl"], "shard 1 of 3 not there yet"),
        (["cards-0-of-2.jsonl", "cards-00-of-2.jsonl", "cards-1-of-2.jsonl"], "possible shard"),
        (["cards-+0-of-2.jsonl", "cards-1-of-2.jsonl"], "possible shard"),
        (["cards-0-of-9223372036854775807.jsonl"], "possible shard"),
        (["cards-0-of-100000.jsonl"], "shards 1, 2, 3"),
    ])
    func mergeSets(names: [String], message: String) throws {
        let out = try TestFixtures.temporaryFolder("rel-merge")
        for name in names { try write("", to: out.appendingPathComponent(name)) }
        let result = try run(cli, ["thumbs", "merge", "--out", out.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("cards.jsonl").path))
    }

    @Test("merge refuses a shard file that is not a regular file of cards")
    func mergeDamaged() throws {
        let out = try TestFixtures.temporaryFolder("rel-merge-bad")
        try write("not a card\n", to: out.appendingPathComponent("cards-0-of-2.jsonl"))
        try write("", to: out.appendingPathComponent("cards-1-of-2.jsonl"))
        let garbage = try run(cli, ["thumbs", "merge", "--out", out.path])
        #expect(garbage.status == 2 && garbage.stderr.contains("lines are not cards"), "\(garbage.stderr)")
        try FileManager.default.removeItem(at: out.appendingPathComponent("cards-0-of-2.jsonl"))
        #expect(mkfifo(out.appendingPathComponent("cards-0-of-2.jsonl").path, 0o600) == 0)
        let fifo = try run(cli, ["thumbs", "merge", "--out", out.path])
        #expect(fifo.status == 2 && fifo.stderr.contains("not a regular file"), "\(fifo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("cards.jsonl").path))
    }

    // 8. truthful exits and messages

    @Test("play exits 1 when an item cannot be played")
    func playExit() throws {
        let folder = try TestFixtures.temporaryFolder("rel-play")
        let feed = folder.appendingPathComponent("feed.json")
        try write(try manifest([("good", TestFixtures.media("hevc.mp4")), ("bad", TestFixtures.bad("random.mp4"))]),
                  to: feed)
        let result = try run(cli, ["play", feed.path, "--swipes", "n", "--dwell-ms", "1", "--size", "90x160"])
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
    }

    @Test("thumbs exits 1 when every entry of the feed is invalid")
    func allInvalid() throws {
        let folder = try TestFixtures.temporaryFolder("rel-invalid")
        let feed = folder.appendingPathComponent("feed.json")
        try write(#"[{"public_id": "a"}, {"created_at": "yesterday"}]"#, to: feed)
        let result = try run(cli, ["thumbs", feed.path, "--out", folder.appendingPathComponent("out").path, "-q"])
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("skipped feed entry"), "\(result.stderr)")
    }

    @Test("a file name starting with '-' is a usage error, not help with exit 0")
    func dashName() throws {
        let result = try run(cli, ["probe", TestFixtures.media("hevc.mp4"), "-dash.mp4"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("unknown option '-dash.mp4'") && result.stderr.contains("./-dash.mp4"))
        #expect(!result.stdout.contains("USAGE"))
    }

    @Test("files the other commands read or write: a FIFO or a file in the way is named with its cause, exit 2")
    func otherFiles() throws {
        let folder = try TestFixtures.temporaryFolder("rel-files")
        let fifo = folder.appendingPathComponent("trace.csv").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let blocker = folder.appendingPathComponent("file").path
        try write("x", to: URL(fileURLWithPath: blocker))
        let cases: [([String], String)] = [
            (["simulate", "--trace", fifo], "not a regular file"),
            (["simulate", "--costs", fifo, "--swipes", "10"], "not a regular file"),
            (["play", "--trace", fifo, "--fixtures", TestFixtures.folder.path], "not a regular file"),
            (["simulate", "--swipes", "10", "--export-trace", blocker + "/x.csv"], "is a file where a folder is needed"),
            (["play", "--swipes", "n", "--dwell-ms", "1", "--fixtures", TestFixtures.folder.path,
              "--dump", blocker + "/sub"], "is a file where a folder is needed"),
            (["demo", "--out", blocker + "/sub"], "is a file where a folder is needed"),
        ]
        for (arguments, message) in cases {
            let result = try run(cli, arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(message) && result.stderr.split(separator: "\n").count == 1,
                    "\(arguments): \(result.stderr)")
        }
        let escaped = try run(cli, ["simulate", "--trace", folder.appendingPathComponent("a\u{1b}[2Jb.csv").path])
        #expect(escaped.status == 2 && !escaped.stderr.contains("\u{1b}") && escaped.stderr.contains("a\\x1b[2Jb"),
                "\(escaped.stderr)")
    }

    @Test("control characters in names are shown escaped, never sent to the terminal raw")
    func controlCharacters() throws {
        let folder = try TestFixtures.temporaryFolder("rel-ctl")
        let feed = folder.appendingPathComponent("feed.json")
        try write(try manifest([("evil\u{1b}]0;owned\u{07}\nrow", TestFixtures.bad("random.mp4")),
                                ("ok", TestFixtures.media("hevc.mp4"))]), to: feed)
        let listing = try run(cli, ["feed", feed.path])
        #expect(listing.status == 0)
        #expect(!listing.stdout.contains("\u{1b}") && listing.stdout.contains("evil\\x1b]0;owned\\x07\\nrow"),
                "\(listing.stdout)")
        #expect(listing.stdout.split(separator: "\n").count == 3)
        let thumbs = try run(cli, ["thumbs", feed.path, "--out", folder.appendingPathComponent("out").path, "-q"])
        #expect(thumbs.status == 1)
        #expect(!thumbs.stderr.contains("\u{1b}") && thumbs.stderr.contains("evil\\x1b"), "\(thumbs.stderr)")
    }

    @Test("a write that fails names its cause in words, not a Foundation error number")
    func writeMessage() throws {
        let folder = try TestFixtures.temporaryFolder("rel-write")
        let blocker = folder.appendingPathComponent("file")
        try write("x", to: blocker)
        let result = try run(cli, ["thumbs", "--fixtures", TestFixtures.folder.path, "--out",
                                   blocker.appendingPathComponent("out").path, "-q"])
        #expect(result.status == 2)
        #expect(!result.stderr.contains("NSCocoaErrorDomain") && result.stderr.contains("Not a directory"),
                "\(result.stderr)")
    }
}
