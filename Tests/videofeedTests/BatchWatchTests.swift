import Foundation
import Media
import TestSupport
import Testing

/// `videofeed thumbs --watch` and `videofeed transcode --watch`, run as the built binary on a temporary folder (and
/// a listing URL on loopback): arrival, removal, replacement, a file still being written, SIGTERM and SIGINT, and the
/// options refused. Every check polls for the state it expects with a generous deadline; none sleeps and then looks.
@Suite struct BatchWatchTests {
    let cli = TestFixtures.cli

    /// A `videofeed` process left running, its output in files (a pipe nobody reads could fill and block it).
    final class Watcher {
        let process = Process()
        let stdoutFile: URL
        let stderrFile: URL

        init(_ cli: URL, _ arguments: [String], logs: URL) throws {
            stdoutFile = logs.appendingPathComponent("stdout.txt")
            stderrFile = logs.appendingPathComponent("stderr.txt")
            _ = FileManager.default.createFile(atPath: stdoutFile.path, contents: nil)
            _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
            process.executableURL = cli
            process.arguments = arguments
            process.standardOutput = try FileHandle(forWritingTo: stdoutFile)
            process.standardError = try FileHandle(forWritingTo: stderrFile)
            try process.run()
        }

        var stdout: String { (try? String(contentsOf: stdoutFile, encoding: .utf8)) ?? "" }
        var stderr: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }

        /// Sends `signal` and waits up to `seconds` for the process to end; its exit status, nil if it did not end.
        func stop(_ signal: Int32 = SIGTERM, within seconds: Double = 60) async -> Int32? {
            kill(process.processIdentifier, signal)
            let ended = await BatchWatchTests.poll(seconds) { !process.isRunning }
            return ended ? process.terminationStatus : nil
        }

        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// Polls `condition` every 50 ms until it holds or `seconds` pass; whether it held. It waits without holding a
    /// thread of Swift's cooperative pool: these tests run beside the async suites, which a blocked pool starves (a
    /// WebSocket test's pings then go unanswered).
    static func poll(_ seconds: Double = 30, _ condition: () throws -> Bool) async rethrows -> Bool {
        try await waitForAsync(seconds: seconds, every: 50, condition)
    }

    /// A temporary folder with `src/` (the watched folder) and the output folder `out/` beside it.
    struct Library {
        let root: URL
        var source: URL { root.appendingPathComponent("src") }
        /// `out/` beside `src/`, or with `outInside`, `src/out/` in the watched folder.
        let out: URL

        init(_ label: String, outInside: Bool = false) throws {
            root = try TestFixtures.temporaryFolder(label)
            out = root.appendingPathComponent(outInside ? "src/out" : "out")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("src"),
                                                    withIntermediateDirectories: true)
        }

        /// Copies `from` in as `name` whole: written under a hidden name (never listed), then renamed into place.
        func add(_ from: String, as name: String) throws {
            let hidden = source.appendingPathComponent(".incoming-\(name)")
            try? FileManager.default.removeItem(at: hidden)
            try FileManager.default.copyItem(atPath: from, toPath: hidden.path)
            guard rename(hidden.path, source.appendingPathComponent(name).path) == 0 else { throw POSIXError(.EIO) }
        }

        func remove(_ name: String) throws {
            try FileManager.default.removeItem(at: source.appendingPathComponent(name))
        }

        func exists(_ relative: String) -> Bool {
            FileManager.default.fileExists(atPath: out.appendingPathComponent(relative).path)
        }

        /// The lines of a JSON Lines record file in OUT by public_id; nil while a line does not parse (never, as the
        /// file is written whole).
        func records(_ name: String) -> [String: [String: Any]]? {
            guard let text = try? String(contentsOf: out.appendingPathComponent(name), encoding: .utf8) else {
                return [:]
            }
            var byID: [String: [String: Any]] = [:]
            for line in text.split(separator: "\n") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let id = object["public_id"] as? String else { return nil }
                byID[id] = object
            }
            return byID
        }

        func cards() -> [String: [String: Any]]? { records("cards.jsonl") }
        func renditions() -> [String: [String: Any]]? { records("renditions.jsonl") }

        /// Every visible entry at the top of OUT.
        func visibleOutputs() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []).filter { !$0.hasPrefix(".") }
                .sorted()
        }

        /// Staging folders or temporary files anywhere under OUT.
        func leftovers() -> [String] {
            (FileManager.default.enumerator(atPath: out.path)?.compactMap { $0 as? String } ?? [])
                .filter { $0.contains(".tmp-") }
        }
    }

    static let thumbsOptions = ["--jobs", "1", "--refresh", "0.5"]
    static let transcodeOptions = ["--jobs", "1", "--refresh", "0.5", "--ladder", "360x640", "--preview-seconds", "0",
                                   "--time-limit", "120"]

    func thumbs(_ library: Library, _ extra: [String] = []) throws -> Watcher {
        try Watcher(cli, ["thumbs", library.source.path, "--out", library.out.path, "--watch"] + Self.thumbsOptions
                        + extra, logs: library.root)
    }

    func transcode(_ library: Library, _ extra: [String] = []) throws -> Watcher {
        try Watcher(cli, ["transcode", library.source.path, "--out", library.out.path, "--watch"]
                        + Self.transcodeOptions + extra, logs: library.root)
    }

    // MARK: thumbs

    @Test("thumbs --watch: a clip copied in while it runs gets its thumbnail and card", .timeLimit(.minutes(2)))
    func thumbsArrival() async throws {
        let library = try Library("watch-thumbs-arrival")
        defer { try? FileManager.default.removeItem(at: library.root) }
        try library.add(TestFixtures.media("hevc.mp4"), as: "first.mp4")
        let watcher = try thumbs(library)
        #expect(await Self.poll { library.cards()?["first"]?["status"] as? String == "ok" }, "\(watcher.stderr)")
        try library.add(TestFixtures.media("vp9.webm"), as: "second.webm")
        #expect(await Self.poll { library.cards()?["second"]?["status"] as? String == "ok" && library.exists("second.jpg") },
                "\(watcher.stdout) \(watcher.stderr)")
        #expect(library.exists("first.jpg"))
        #expect(await watcher.stop() == 0, "\(watcher.stderr)")
        #expect(library.cards()?.count == 2)
    }

    @Test("thumbs --watch: a removed file's thumbnail and card go", .timeLimit(.minutes(2)))
    func thumbsRemoval() async throws {
        let library = try Library("watch-thumbs-removal")
        defer { try? FileManager.default.removeItem(at: library.root) }
        try library.add(TestFixtures.media("hevc.mp4"), as: "kept.mp4")
        try library.add(TestFixtures.media("vp9.webm"), as: "gone.webm")
        let watcher = try thumbs(library)
        #expect(await Self.poll { library.cards()?.count == 2 && library.exists("gone.jpg") }, "\(watcher.stderr)")
        try library.remove("gone.webm")
        #expect(await Self.poll { library.cards()?.keys.sorted() == ["kept"] && !library.exists("gone.jpg") },
                "\(watcher.stdout) \(watcher.stderr)")
        #expect(library.exists("kept.jpg"))
        #expect(await watcher.stop() == 0, "\(watcher.stderr)")
    }

    @Test("thumbs --watch: a replaced file is redone (its card names the new version)", .timeLimit(.minutes(2)))
    func thumbsReplacement() async throws {
        let library = try Library("watch-thumbs-replace")
        defer { try? FileManager.default.removeItem(at: library.root) }
        try library.add(TestFixtures.media("hevc.mp4"), as: "clip.mp4")
        let watcher = try thumbs(library)
        #expect(await Self.poll { library.cards()?["clip"]?["status"] as? String == "ok" }, "\(watcher.stderr)")
        let before = try #require(library.cards()?["clip"])
        // A portrait clip of another size over the landscape one, renamed into place as an upload tool does.
        let replacement = TestFixtures.media("h264_portrait.mp4")
        let newSize = try #require(try FileManager.default.attributesOfItem(atPath: replacement)[.size] as? Int)
        try library.add(replacement, as: "clip.mp4")
        #expect(await Self.poll { library.cards()?["clip"]?["source_size"] as? Int == newSize },
                "\(watcher.stdout) \(watcher.stderr)")
        let after = try #require(library.cards()?["clip"])
        #expect(after["status"] as? String == "ok")
        #expect(before["height"] as? Int != after["height"] as? Int, "\(before) \(after)")
        let picture = try MediaFile(path: library.out.appendingPathComponent("clip.jpg").path).info
        #expect(picture.primaryVideoStream?.height == after["height"] as? Int)
        #expect(await watcher.stop() == 0, "\(watcher.stderr)")
    }

    @Test("thumbs --watch: a file still being written (open, half written) waits until it is closed and complete",
          .timeLimit(.minutes(2)))
    func thumbsFileBeingWritten() async throws {
        let library = try Library("watch-thumbs-writing")
        defer { try? FileManager.default.removeItem(at: library.root) }
        let watcher = try thumbs(library)
        // The watch is up once its first pass has written the (empty) card file.
        #expect(await Self.poll { library.exists("cards.jsonl") }, "\(watcher.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: TestFixtures.media("h264_portrait.mp4")))
        let path = library.source.appendingPathComponent("upload.mp4").path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let writer = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try writer.write(contentsOf: bytes.prefix(bytes.count / 2))
        // Held open for a few seconds: in that time another file arrives and is done, this one is not.
        try library.add(TestFixtures.media("hevc.mp4"), as: "meanwhile.mp4")
        #expect(await Self.poll { library.cards()?["meanwhile"]?["status"] as? String == "ok" }, "\(watcher.stderr)")
        let heldUntil = Date().addingTimeInterval(3)
        var seen = false
        while Date() < heldUntil && !seen {
            seen = library.cards()?["upload"] != nil || library.exists("upload.jpg")
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        #expect(!seen, "a half-written file was processed: \(watcher.stdout)")
        try writer.write(contentsOf: bytes.suffix(from: bytes.count / 2))
        try writer.close()
        #expect(await Self.poll { library.cards()?["upload"]?["status"] as? String == "ok" && library.exists("upload.jpg") },
                "\(watcher.stdout) \(watcher.stderr)")
        #expect(library.cards()?["upload"]?["source_size"] as? Int == bytes.count)
        #expect(await watcher.stop() == 0, "\(watcher.stderr)")
    }

    @Test("thumbs --watch: SIGTERM or SIGINT while it waits ends it with status 0 and the cards intact",
          .timeLimit(.minutes(2)), arguments: [SIGTERM, SIGINT])
    func thumbsSignalWhileWaiting(signal: Int32) async throws {
        let library = try Library("watch-thumbs-signal")
        defer { try? FileManager.default.removeItem(at: library.root) }
        try library.add(TestFixtures.media("hevc.mp4"), as: "a.mp4")
        try library.add(TestFixtures.media("rotate90.mp4"), as: "b.mp4")
        let watcher = try thumbs(library)
        #expect(await Self.poll { library.cards()?.count == 2 }, "\(watcher.stderr)")
        #expect(await watcher.stop(signal) == 0, "\(watcher.stderr)")
        #expect(watcher.stderr.contains("stopped by \(signal == SIGTERM ? "SIGTERM" : "SIGINT")"), "\(watcher.stderr)")
        let cards = try #require(library.cards())
        #expect(cards.count == 2 && cards.values.allSatisfy { $0["status"] as? String == "ok" })
        #expect(library.leftovers().isEmpty, "\(library.leftovers())")
        // Nothing was left undone: a run without --watch skips both.
        let again = try await runOffPool(cli, ["thumbs", library.source.path, "--out", library.out.path, "-q"])
        #expect(again.status == 0 && again.stdout.contains("0 rendered, 2 skipped"), "\(again.stdout)")
    }

    @Test("""
        thumbs --watch on a listing URL served from loopback: a listing not there yet is reported and read again; an \
        item added to the listing is picked up
        """,
          .timeLimit(.minutes(2)))
    func thumbsListingURL() async throws {
        let library = try Library("watch-thumbs-url")
        defer { try? FileManager.default.removeItem(at: library.root) }
        let site = library.root.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        for name in ["hevc.mp4", "vp9.webm"] {
            try FileManager.default.copyItem(atPath: TestFixtures.media(name),
                                             toPath: site.appendingPathComponent(name).path)
        }
        let server = try StaticHTTPServer(folder: site.path)
        let listing = site.appendingPathComponent("feed.json")
        /// Writes the manifest whole (a rename), its time a few seconds ahead: http.server answers
        /// If-Modified-Since by whole seconds, and a rewrite in the second of the last answer must not look unchanged.
        func publish(_ entries: [(id: String, file: String)], ahead: Double) throws {
            let json = entries.map { """
                {"public_id": "\($0.id)", "created_at": "2026-01-01T00:00:00Z", "url": "\(server.url($0.file))"}
                """ }
            let temporary = site.appendingPathComponent(".feed.json.tmp")
            try Data(("[" + json.joined(separator: ",") + "]").utf8).write(to: temporary)
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(ahead)],
                                                  ofItemAtPath: temporary.path)
            guard rename(temporary.path, listing.path) == 0 else { throw POSIXError(.EIO) }
        }
        // No listing yet (404): the pass is reported and the listing read again later, not the end of the watch.
        let watcher = try Watcher(cli, ["thumbs", server.url("feed.json"), "--out", library.out.path, "--watch",
                                        "--no-cache", "--retries", "0", "--time-limit", "20"] + Self.thumbsOptions,
                                  logs: library.root)
        #expect(await Self.poll {
            watcher.stderr.contains("cannot read the feed") && watcher.stderr.contains("will try again")
        }, "\(watcher.stderr)")
        #expect(watcher.process.isRunning)
        try publish([("first", "hevc.mp4")], ahead: 0)
        #expect(await Self.poll { library.cards()?["first"]?["status"] as? String == "ok" }, "\(watcher.stderr)")
        try publish([("first", "hevc.mp4"), ("second", "vp9.webm")], ahead: 5)
        #expect(await Self.poll { library.cards()?["second"]?["status"] as? String == "ok" && library.exists("second.jpg") },
                "\(watcher.stdout) \(watcher.stderr)")
        #expect(library.cards()?["first"]?["status"] as? String == "ok")
        #expect(await watcher.stop() == 0, "\(watcher.stderr)")
    }

    // MARK: transcode

    /// The record of `id` once it is `ok` and its folder is on disk; nil until then.
    func transcoded(_ library: Library, _ id: String) -> [String: Any]? {
        guard let record = library.renditions()?[id], record["status"] as? String == "ok",
              let folder = record["folder"] as? String, library.exists(folder) else { return nil }
        return record
    }

    @Test("transcode --watch: arrival gets a rendition folder and record; removal takes them away",
          .timeLimit(.minutes(2)))
    func transcodeArrivalAndRemoval() async throws {
        let library = try Library("watch-transcode-arrive")
        defer { try? FileManager.default.removeItem(at: library.root) }
        try library.add(TestFixtures.transcode("rotated_phone.mp4"), as: "phone.mp4")
        let watcher = try transcode(library)
        #expect(await Self.poll { transcoded(library, "phone") != nil }, "\(watcher.stderr)")
        try library.add(TestFixtures.transcode("long_gop_b.mp4"), as: "arrived.mp4")
        #expect(await Self.poll { transcoded(library, "arrived") != nil }, "\(watcher.stdout) \(watcher.stderr)")
        let folder = try #require(transcoded(library, "arrived")?["folder"] as? String)
        #expect(library.exists(folder + "/360x640/index.m3u8") && library.exists(folder + "/master.m3u8"))
        try library.remove("arrived.mp4")
        #expect(await Self.poll { library.renditions()?["arrived"] == nil && !library.exists(folder) },
                "\(watcher.stdout) \(watcher.stderr)")
        #expect(transcoded(library, "phone") != nil)
        #expect(await watcher.stop() == 0, "\(watcher.stderr)")
        #expect(library.leftovers().isEmpty, "\(library.leftovers())")
    }

    @Test("transcode --watch: a replaced file is redone into a new version folder and the old one goes",
          .timeLimit(.minutes(2)))
    func transcodeReplacement() async throws {
        let library = try Library("watch-transcode-replace")
        defer { try? FileManager.default.removeItem(at: library.root) }
        try library.add(TestFixtures.transcode("rotated_phone.mp4"), as: "clip.mp4")
        let watcher = try transcode(library)
        #expect(await Self.poll { transcoded(library, "clip") != nil }, "\(watcher.stderr)")
        let old = try #require(transcoded(library, "clip")?["folder"] as? String)
        try library.add(TestFixtures.transcode("long_gop_b.mp4"), as: "clip.mp4")
        #expect(await Self.poll {
            guard let folder = transcoded(library, "clip")?["folder"] as? String else { return false }
            return folder != old && !library.exists(old)
        }, "\(watcher.stdout) \(watcher.stderr)")
        #expect(await watcher.stop() == 0, "\(watcher.stderr)")
        #expect(library.visibleOutputs().filter { $0.hasPrefix("clip.") }.count == 1, "\(library.visibleOutputs())")
    }

    @Test("transcode --watch: a file still being written waits until it is closed and complete",
          .timeLimit(.minutes(2)))
    func transcodeFileBeingWritten() async throws {
        let library = try Library("watch-transcode-writing")
        defer { try? FileManager.default.removeItem(at: library.root) }
        let watcher = try transcode(library)
        #expect(await Self.poll { library.exists("renditions.jsonl") }, "\(watcher.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: TestFixtures.transcode("rotated_phone.mp4")))
        let path = library.source.appendingPathComponent("upload.mp4").path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let writer = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try writer.write(contentsOf: bytes.prefix(bytes.count / 2))
        let heldUntil = Date().addingTimeInterval(3)
        var seen = false
        while Date() < heldUntil && !seen {
            seen = library.renditions()?["upload"] != nil
                || library.visibleOutputs().contains { $0.hasPrefix("upload.") }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        #expect(!seen, "a half-written file was transcoded: \(watcher.stdout)")
        try writer.write(contentsOf: bytes.suffix(from: bytes.count / 2))
        try writer.close()
        #expect(await Self.poll { transcoded(library, "upload") != nil }, "\(watcher.stdout) \(watcher.stderr)")
        #expect(library.renditions()?["upload"]?["source_size"] as? Int == bytes.count)
        #expect(await watcher.stop() == 0, "\(watcher.stderr)")
    }

    @Test("""
        transcode --watch: SIGTERM mid-batch finishes the item in hand, exits 0 with whole records, and leaves the \
        rest for the next run
        """, .timeLimit(.minutes(3)))
    func transcodeSignalMidBatch() async throws {
        let library = try Library("watch-transcode-term")
        defer { try? FileManager.default.removeItem(at: library.root) }
        let count = 12
        for i in 0..<count {
            try library.add(TestFixtures.transcode("rotated_phone.mp4"), as: "c\(i).mp4")
        }
        // Setup, not a check: past FileSettling's quiet second the first pass lists all twelve, so the stop falls in
        // the middle of one batch over all of them.
        try await Task.sleep(nanoseconds: 1_500_000_000)
        let watcher = try transcode(library, ["--json"])
        // Once the first item's folder is in place, the batch is under way.
        #expect(await Self.poll { library.visibleOutputs().contains { $0.hasPrefix("c") } }, "\(watcher.stderr)")
        #expect(await watcher.stop() == 0, "\(watcher.stderr)")
        let records = try #require(library.renditions())
        #expect(records.count <= count)
        for (id, record) in records {
            #expect(record["status"] as? String == "ok", "\(id)")
            #expect(transcoded(library, id) != nil, "\(id): its folder is not whole")
        }
        #expect(library.leftovers().isEmpty, "\(library.leftovers())")
        let lastLine = try #require(watcher.stdout.split(separator: "\n").last)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(lastLine.utf8)) as? [String: Any])
        #expect(summary["failed"] as? Int == 0)
        let notReached = try #require(summary["not_reached"] as? Int)
        #expect(records.count + notReached == count, "\(summary)")
        // The next run does exactly what was not reached.
        let rest = try await runOffPool(cli, ["transcode", library.source.path, "--out", library.out.path, "--ladder", "360x640",
                                 "--preview-seconds", "0", "--json", "-q"])
        #expect(rest.status == 0, "\(rest.stderr)")
        #expect(rest.stdout.contains("\"transcoded\":\(notReached)")
                    && rest.stdout.contains("\"skipped\":\(records.count)"), "\(rest.stdout)")
    }

    @Test("""
        --watch with OUT inside the watched folder: its own thumbnails, MP4s and records never become items (OUT is \
        marked as the engine's outputs)
        """, .timeLimit(.minutes(3)))
    func outputsInsideTheWatchedFolder() async throws {
        for command in ["thumbs", "transcode"] {
            let library = try Library("watch-out-inside-\(command)", outInside: true)
            defer { try? FileManager.default.removeItem(at: library.root) }
            try library.add(TestFixtures.media("hevc.mp4"), as: "first.mp4")
            let watcher = command == "thumbs" ? try thumbs(library) : try transcode(library)
            let records = { command == "thumbs" ? library.cards() : library.renditions() }
            #expect(await Self.poll(60) { records()?.keys.sorted() == ["first"] }, "\(watcher.stderr)")
            // A pass after the outputs exist (the second clip's) lists the two clips and nothing of OUT.
            try library.add(TestFixtures.media("vp9.webm"), as: "second.webm")
            #expect(await Self.poll(60) { records()?["second"] != nil }, "\(watcher.stdout) \(watcher.stderr)")
            #expect(records()?.keys.sorted() == ["first", "second"], "\(watcher.stdout)")
            #expect(await watcher.stop() == 0, "\(watcher.stderr)")
        }
    }

    // MARK: options

    @Test("--watch is refused with a shard (given or from the environment), and --refresh without --watch")
    func refusedOptions() async throws {
        let library = try Library("watch-refused")
        defer { try? FileManager.default.removeItem(at: library.root) }
        for command in ["thumbs", "transcode"] {
            let sharded = try await runOffPool(cli, [command, library.source.path, "--out", library.out.path, "--watch",
                                        "--shard", "0/2"])
            #expect(sharded.status == 2 && sharded.stderr.contains("--watch"), "\(sharded.stderr)")
            let fromEnvironment = try await runOffPool(URL(fileURLWithPath: "/usr/bin/env"), [
                "SLURM_ARRAY_TASK_COUNT=2", "SLURM_ARRAY_TASK_ID=1", cli.path, command, library.source.path,
                "--out", library.out.path, "--watch"])
            #expect(fromEnvironment.status == 2 && fromEnvironment.stderr.contains("shard"),
                    "\(fromEnvironment.stderr)")
            let refresh = try await runOffPool(cli, [command, library.source.path, "--out", library.out.path, "--refresh", "5"])
            #expect(refresh.status == 2 && refresh.stderr.contains("--refresh"), "\(refresh.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: library.out.path))
    }
}
