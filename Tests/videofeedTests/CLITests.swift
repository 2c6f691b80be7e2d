import Foundation
import TestSupport
import Testing

/// The built `videofeed` binary, run as a user runs it: output, files and exit status.
@Suite struct CLITests {
    let cli = TestFixtures.cli

    @Test("dump --format framemd5 prints ffmpeg's golden for every fixture", arguments: TestFixtures.mediaNames)
    func framemd5(name: String) throws {
        let result = try run(cli, ["dump", "--format", "framemd5", TestFixtures.media(name)])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == (try TestFixtures.golden(name)))
    }

    @Test("dump --format framemd5 --out FILE writes the same text to a file")
    func framemd5ToFile() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("h.framemd5").path
        let result = try run(cli, ["dump", "--format", "framemd5", "--out", out, TestFixtures.media("hevc.mp4")])
        #expect(result.status == 0)
        #expect(try String(contentsOfFile: out, encoding: .utf8) == (try TestFixtures.golden("hevc.mp4")))
    }

    @Test("bad inputs: non-zero exit, one line on stderr naming the item, no file left behind", arguments: [
        ("empty.mp4", "invalid data"), ("truncated.mp4", "invalid data"), ("random.mp4", "invalid data"),
        ("text.txt", "invalid data"), ("text.mp4", "invalid data"), ("audio_only.m4a", "no video stream"),
    ])
    func badInput(name: String, kind: String) throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for format in ["png", "framemd5"] {
            let out = format == "png" ? folder.appendingPathComponent("frames").path : folder.appendingPathComponent("x.framemd5").path
            let result = try run(cli, ["dump", "--format", format, "--out", out, TestFixtures.bad(name)])
            #expect(result.status != 0)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(result.stderr)")
            #expect(result.stderr.contains(name) && result.stderr.contains(kind))
            #expect(!result.stderr.contains("Fatal error"))
            let files = (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String]) ?? []
            #expect(files.filter { !$0.hasSuffix("frames") }.isEmpty, "left behind: \(files)")
        }
    }

    @Test("dump of a missing file fails with one line")
    func missing() throws {
        let result = try run(cli, ["dump", "/nonexistent/x.mp4"])
        #expect(result.status != 0)
        #expect(result.stderr == "videofeed: /nonexistent/x.mp4: open failed: file not found (No such file or directory)\n")
    }

    @Test("probe reports good inputs, one stderr line per failure, and exits non-zero")
    func probeMixed() throws {
        let result = try run(cli, ["probe", TestFixtures.media("rotate90.mp4"), TestFixtures.bad("empty.mp4"),
                                   TestFixtures.media("cover.mp3")])
        #expect(result.status == 1)
        #expect(result.stdout.contains("rotation 90°"))
        #expect(result.stdout.contains("[cover picture]"))
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("empty.mp4"))
    }

    @Test("probe shows the header's claimed duration (as ffprobe) and where the video really ends: a fragmented MP4 claiming 143,165 s ends at 2.567 s")
    func probeShowsTheRealEnd() throws {
        let path = TestFixtures.duration("frag_unknown_duration.mp4")
        let table = try run(cli, ["probe", path])
        #expect(table.status == 0)
        #expect(table.stdout.contains("duration: 143165.") && table.stdout.contains("video ends: 2.567 s"))
        let json = try run(cli, ["probe", "--json", path])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let end = try #require(entries.first?["videoEnd"] as? [String: Any])
        #expect(abs((end["end"] as? Double ?? 0) - 2.567) < 0.001 && end["isComplete"] as? Bool == true)
    }

    @Test("probe --json is machine-readable and includes errors")
    func probeJSON() throws {
        let result = try run(cli, ["probe", "--json", TestFixtures.media("hevc_10bit.mp4"), TestFixtures.bad("text.txt")])
        #expect(result.status == 1)
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        #expect(entries.count == 2)
        let streams = try #require((entries[0]["info"] as? [String: Any])?["streams"] as? [[String: Any]])
        #expect(streams.first?["bitDepth"] as? Int == 10)
        #expect((entries[1]["error"] as? [String: Any])?["kind"] as? String == "invalidData")
    }

    @Test("dump --upright writes upright images with the marker top-left", arguments: ["rotate90.mp4", "rotate270.mp4"])
    func uprightPPM(name: String) throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try run(cli, ["dump", "--upright", "--format", "ppm", "--frames", "1", "--out", folder.path,
                                   TestFixtures.media(name)])
        #expect(result.status == 0, "\(result.stderr)")
        let data = try [UInt8](Data(contentsOf: folder.appendingPathComponent("frame-000001.ppm")))
        let header = Array("P6\n240 320\n255\n".utf8)
        #expect(Array(data.prefix(header.count)) == header)
        let pixels = Array(data.dropFirst(header.count))
        let topLeft = pixels[(10 * 240 + 10) * 3..<(10 * 240 + 10) * 3 + 3]
        #expect(topLeft[topLeft.startIndex] > 200 && topLeft[topLeft.startIndex + 1] < 60)
    }

    @Test("dump options: --start, --frames, --every, --size, --pix-fmt, --keyframes-only")
    func dumpOptions() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try run(cli, ["dump", "--format", "jpg", "--start", "0.5", "--frames", "3", "--every", "5",
                                   "--size", "90x160", "--out", folder.path, TestFixtures.media("h264_portrait.mp4")])
        #expect(result.status == 0, "\(result.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(files == ["frame-000001.jpg", "frame-000002.jpg", "frame-000003.jpg"])
        let probe = try run(cli, ["probe", "--json", folder.appendingPathComponent("frame-000001.jpg").path])
        #expect(probe.stdout.contains("\"width\" : 90") && probe.stdout.contains("\"height\" : 160"))

        let md5 = try run(cli, ["dump", "--format", "framemd5", "--keyframes-only", "--pix-fmt", "gray",
                                TestFixtures.media("black_start.mp4")])
        #expect(md5.status == 0)
        let lines = md5.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(!lines.isEmpty && lines.count < 75)
        #expect(lines.allSatisfy { $0.contains(" 76800, ") })
    }

    @Test("invalid options are rejected before any work")
    func validation() throws {
        #expect(try run(cli, ["dump", "--every", "0", TestFixtures.media("hevc.mp4")]).status != 0)
        #expect(try run(cli, ["dump", "--size", "12", TestFixtures.media("hevc.mp4")]).status != 0)
        #expect(try run(cli, ["dump", "--format", "gif", TestFixtures.media("hevc.mp4")]).status != 0)
    }
}

/// `videofeed demo`, what `make demo` runs.
@Suite struct DemoCommandTests {
    @Test("demo probes and dumps every item of the bundled feed")
    func bundledFeed() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try run(TestFixtures.cli, ["demo", "--out", folder.path], in: TestFixtures.root)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("15 items, 0 failed"))
        let written = folder.appendingPathComponent("fixtures")
        for name in ["h264_portrait", "rotate90", "cover", "image_png", "animated"] {
            for suffix in [".json", ".framemd5", "-000001.png"] {
                #expect(FileManager.default.fileExists(atPath: written.appendingPathComponent(name + suffix).path))
            }
        }
        let md5 = try String(contentsOf: written.appendingPathComponent("vfr.framemd5"), encoding: .utf8)
        #expect(md5 == (try TestFixtures.golden("vfr.mp4")))
    }

    @Test("a failing item is reported and the others go on")
    func failingItem() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let manifest = folder.appendingPathComponent("feed.json")
        try Data("""
        [{"public_id": "good", "created_at": "2026-01-02T00:00:00Z", "url": "\(TestFixtures.media("hevc.mp4"))"},
         {"public_id": "bad", "created_at": "2026-01-01T00:00:00Z", "url": "\(TestFixtures.bad("truncated.mp4"))"}]
        """.utf8).write(to: manifest)
        let out = folder.appendingPathComponent("out")
        let result = try run(TestFixtures.cli, ["demo", "--feed", manifest.path, "--out", out.path])
        #expect(result.status != 0)
        #expect(result.stdout.contains("2 items, 1 failed"))
        #expect(result.stderr.contains("bad") && result.stderr.contains("moov atom not found"))
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("good.framemd5").path))
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("bad.json").path))
    }
}

/// `videofeed play`, the feed engine headless.
@Suite struct PlayCommandTests {
    @Test("a swipe script over the bundled feed: one line per swipe, hits and misses add up, metrics last")
    func script() throws {
        // 500 ms on each item: room for item 1's first frame behind item 0's on a loaded machine (with 200 ms it missed
        // once in a few runs while other suites decoded in parallel).
        let result = try run(TestFixtures.cli, ["play", "--swipes", "n,n,p,j6,n", "--dwell-ms", "500",
                                                "--size", "180x320"], in: TestFixtures.root)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count >= 5 + 4)
        #expect(lines[0].contains("#1") && lines[2].contains("#1") && lines[3].contains("#6"))
        #expect(lines[0].contains("hit"), "item 1 was prefetched while item 0 was shown: \(lines[0])")
        #expect(result.stdout.contains("policy window(2,2): 5 swipes"))
    }

    @Test("a paged listing URL plays across its page boundaries: the next page is read while the viewer goes")
    func pagedListing() throws {
        let files = ["h264_portrait.mp4", "hevc.mp4", "vp9.webm", "av1.mp4", "rotate90.mp4", "vfr.mp4"]
            .map(TestFixtures.media)
        let server = try PagedListingServer(files: files, perPage: 2)
        let cache = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: cache) }
        let result = try run(TestFixtures.cli, ["play", server.listingURL, "--swipes", "n,n,n,n,n", "--dwell-ms", "300",
                                                "--size", "90x160", "--json", "--cache-dir", cache.path])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let swipes = try #require(report["swipes"] as? [[String: Any]])
        #expect(swipes.map { $0["index"] as? Int } == [1, 2, 3, 4, 5])
        #expect(swipes.map { $0["publicID"] as? String } == (1...5).map { "paged/item_\($0)" })
        #expect(!swipes.contains { ($0["result"] as? String)?.hasPrefix("hit") != true && $0["result"] as? String != "miss" },
                "\(swipes)")
        #expect(try (1...3).map { try server.requests(forPage: $0) } == [1, 1, 1])
    }

    @Test("a random session wraps by default, so no n or p stays put at an end; --no-wrap gives the ends back")
    func randomWraps() throws {
        func stays(_ extra: [String]) throws -> (np: Int, all: Int) {
            let result = try run(TestFixtures.cli, ["play", "--random", "40", "--seed", "7", "--dwell-ms", "5",
                                                    "--size", "90x160", "--json"] + extra, in: TestFixtures.root)
            #expect(result.status == 0, "\(result.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let swipes = try #require(report["swipes"] as? [[String: Any]])
            let np = swipes.filter { ["n", "p"].contains($0["action"] as? String) && $0["result"] as? String == "stay" }
            return (np.count, report["stayed"] as? Int ?? -1)
        }
        let wrapping = try stays([])
        #expect(wrapping.np == 0, "a random session must not stay put at the ends: \(wrapping)")
        let ends = try stays(["--no-wrap"])
        #expect(ends.np > 0 && ends.all > wrapping.all, "\(ends) vs \(wrapping)")
    }

    @Test("--json: per-swipe records and metrics; the same seed gives the same swipes")
    func randomJSON() throws {
        func play() throws -> [String: Any] {
            let result = try run(TestFixtures.cli, ["play", "--random", "12", "--seed", "7", "--dwell-ms", "20-60",
                                                    "--size", "90x160", "--policy", "tiktokLike", "--json"],
                                 in: TestFixtures.root)
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        }
        let a = try play(), b = try play()
        let swipesA = try #require(a["swipes"] as? [[String: Any]])
        let swipesB = try #require(b["swipes"] as? [[String: Any]])
        #expect(swipesA.count == 12)
        #expect(swipesA.map { $0["index"] as? Int } == swipesB.map { $0["index"] as? Int })
        let metrics = try #require(a["metrics"] as? [String: Any])
        let hits = metrics["hits"] as? Int ?? -1, misses = metrics["misses"] as? Int ?? -1
        #expect(hits + misses == metrics["swipes"] as? Int)
        #expect((metrics["peakDecodedBytes"] as? Int ?? .max) <= (metrics["memoryBudget"] as? Int ?? 0))
        #expect(a["policy"] as? String == "tiktokLike")
    }

    @Test("--dump writes the frame shown after each swipe; a corrupt item is reported and play goes on")
    func dumpAndCorrupt() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let manifest = folder.appendingPathComponent("feed.json")
        let entries = [TestFixtures.media("hevc.mp4"), TestFixtures.bad("truncated.mp4"), TestFixtures.media("rotate90.mp4")]
            .enumerated().map { "{\"public_id\": \"i\($0.offset)\", \"created_at\": \"2026-01-0\($0.offset + 1)T00:00:00Z\", \"url\": \"\($0.element)\"}" }
        try Data("[\(entries.joined(separator: ","))]".utf8).write(to: manifest)
        let out = folder.appendingPathComponent("shown")
        let result = try run(TestFixtures.cli, ["play", manifest.path, "--swipes", "j1,j2", "--dwell-ms", "100",
                                                "--size", "120x160", "--dump", out.path])
        // Exit 1: an item failed (the others played).
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.contains("failed") && result.stdout.contains("truncated.mp4"))
        let files = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(files == ["swipe-0002-item2.png"])
    }

    @Test("an action that cannot move (n on the last item, a jump to the item on screen) is a stay, not a swipe")
    func stays() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let manifest = folder.appendingPathComponent("feed.json")
        let entries = [TestFixtures.media("hevc.mp4"), TestFixtures.media("rotate90.mp4")]
            .enumerated().map { "{\"public_id\": \"i\($0.offset)\", \"created_at\": \"2026-01-0\($0.offset + 1)T00:00:00Z\", \"url\": \"\($0.element)\"}" }
        try Data("[\(entries.joined(separator: ","))]".utf8).write(to: manifest)
        let arguments = ["play", manifest.path, "--swipes", "n,n,p,j0", "--dwell-ms", "50", "--size", "90x160"]
        let json = try run(TestFixtures.cli, arguments + ["--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let records = try #require(report["swipes"] as? [[String: Any]])
        #expect(records.map { $0["index"] as? Int } == [1, 1, 0, 0])
        #expect(records.map { $0["result"] as? String == "stay" } == [false, true, false, true])
        #expect(records[1]["timeToFirstFrameMs"] == nil || records[1]["timeToFirstFrameMs"] is NSNull)
        #expect(report["stayed"] as? Int == 2)
        let metrics = try #require(report["metrics"] as? [String: Any])
        #expect(metrics["swipes"] as? Int == 2)
        #expect((metrics["hits"] as? Int ?? -1) + (metrics["misses"] as? Int ?? -1) == 2)
        let text = try run(TestFixtures.cli, arguments)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("policy window(2,2): 2 swipes"))
        #expect(text.stdout.contains("2 of 4 actions did not move"))
    }

    @Test("bad options are refused before any work")
    func validation() throws {
        #expect(try run(TestFixtures.cli, ["play", "--swipes", "n,x"], in: TestFixtures.root).status != 0)
        #expect(try run(TestFixtures.cli, ["play", "--policy", "nope"], in: TestFixtures.root).status != 0)
        #expect(try run(TestFixtures.cli, ["play", "--budget", "lots"], in: TestFixtures.root).status != 0)
    }
}
