import Foundation
import Testing

/// `videofeed feed`, run as the built binary: output and exit status as a user sees them.
@Suite("videofeed feed")
struct FeedCommandTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The `videofeed` executable built next to the test bundle.
    static let executable: URL = {
        var folder = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent("videofeed")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder.deleteLastPathComponent()
        }
        return Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("videofeed")
    }()

    /// Runs `videofeed feed <arguments>` in `directory` with extra environment variables.
    func feed(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws -> Run {
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["feed"] + arguments
        process.currentDirectoryURL = directory
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "VIDEOFEED_FIXTURES")
        env["XDG_CACHE_HOME"] = directory.appendingPathComponent("cache").path
        process.environment = env.merging(environment) { _, new in new }
        let out = directory.appendingPathComponent("stdout-\(UUID().uuidString)")
        let err = directory.appendingPathComponent("stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus,
            stdout: try String(contentsOf: out, encoding: .utf8),
            stderr: try String(contentsOf: err, encoding: .utf8))
    }

    func withFolder<T>(_ body: (URL) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("FeedCommandTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try body(folder.resolvingSymlinksInPath())
    }

    func write(_ text: String, to file: URL, modified: Date? = nil) throws {
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: file)
        if let modified {
            try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: file.path)
        }
    }

    /// Its third entry is invalid, so listing it exits 1 (an item failed) after printing the other two.
    let manifest = """
        [
          {"public_id": "fixtures/h264_portrait", "created_at": "2026-11-01T10:00:00Z",
           "url": "media/h264_portrait.mp4", "format": "mp4", "bytes": 1234, "width": 720, "height": 1280,
           "duration": 2.0},
          {"public_id": "cloud/a/long_public_id", "created_at": "2026-11-02T10:00:00.5Z",
           "url": "https://cdn.example.com/a.mp4"},
          {"public_id": "broken", "created_at": "not a date", "url": "media/broken.mp4"}
        ]
        """

    @Test("a manifest file as an aligned table; relative urls resolved against the manifest; skips on stderr")
    func table() throws {
        try withFolder { folder in
            try write(manifest, to: folder.appendingPathComponent("feeds/feed.json"))
            let run = try feed(["feeds/feed.json"], in: folder)
            #expect(run.status == 1)
            #expect(run.stdout == """
                PUBLIC_ID               CREATED_AT            SOURCE
                fixtures/h264_portrait  2026-11-01T10:00:00Z  \(folder.path)/feeds/media/h264_portrait.mp4
                cloud/a/long_public_id  2026-11-02T10:00:00Z  https://cdn.example.com/a.mp4

                """)
            #expect(run.stderr == "skipped: entry 2 (broken): \"created_at\" \"not a date\" is not a date\n")
        }
    }

    @Test("--json --limit prints a manifest array of that many items")
    func json() throws {
        try withFolder { folder in
            try write(manifest, to: folder.appendingPathComponent("feed.json"))
            let run = try feed(["feed.json", "--json", "--limit", "1"], in: folder)
            #expect(run.status == 1)
            let items = try #require(
                try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
            #expect(items.count == 1)
            #expect(items.first?["public_id"] as? String == "fixtures/h264_portrait")
            #expect(items.first?["url"] as? String == "file://\(folder.path)/media/h264_portrait.mp4")
            #expect(items.first?["created_at"] as? String == "2026-11-01T10:00:00.000Z")
        }
    }

    @Test("a folder, newest first or by name")
    func folder() throws {
        try withFolder { folder in
            let media = folder.appendingPathComponent("media")
            try write(
                "1", to: media.appendingPathComponent("clip10.mp4"), modified: Date(timeIntervalSince1970: 100))
            try write(
                "2", to: media.appendingPathComponent("sub/clip2.webm"), modified: Date(timeIntervalSince1970: 200))
            try write("x", to: media.appendingPathComponent("readme.txt"))
            let newest = try feed(["media"], in: folder)
            #expect(newest.status == 0)
            #expect(newest.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: " ").first! }
                == ["sub/clip2", "clip10"])
            let byName = try feed(["media", "--sort", "name"], in: folder)
            #expect(byName.stdout.split(separator: "\n").dropFirst().map { $0.split(separator: " ").first! }
                == ["clip10", "sub/clip2"])
        }
    }

    @Test("no SOURCE: the bundled feed, found above the current directory or through VIDEOFEED_FIXTURES")
    func bundled() throws {
        try withFolder { folder in
            try write(manifest, to: folder.appendingPathComponent("project/Fixtures/feed.json"))
            let deep = folder.appendingPathComponent("project/docs/deep")
            try FileManager.default.createDirectory(at: deep, withIntermediateDirectories: true)
            let walked = try feed(["--limit", "1"], in: deep)
            #expect(walked.status == 1)
            #expect(walked.stdout.contains("\(folder.path)/project/Fixtures/media/h264_portrait.mp4"))
            let fromEnvironment = try feed(
                ["--limit", "1"], in: folder,
                environment: ["VIDEOFEED_FIXTURES": folder.appendingPathComponent("project/Fixtures").path])
            #expect(fromEnvironment.stdout == walked.stdout)
        }
    }

    @Test("a URL that fails falls back to the bundled feed with a warning, or fails with --no-fallback")
    func remoteFallback() throws {
        try withFolder { folder in
            try write(manifest, to: folder.appendingPathComponent("Fixtures/feed.json"))
            let url = "http://127.0.0.1:9/feed.json?token=SECRET"
            let fallback = try feed([url, "--timeout", "5", "--retries", "0"], in: folder)
            #expect(fallback.status == 1)
            #expect(fallback.stdout.contains("fixtures/h264_portrait"))
            #expect(fallback.stderr.hasPrefix("WARNING: GET http://127.0.0.1:9/feed.json?token=REDACTED failed"))
            #expect(!fallback.stderr.contains("SECRET"))

            let strict = try feed([url, "--timeout", "5", "--retries", "0", "--no-fallback"], in: folder)
            #expect(strict.status == 2)
            #expect(strict.stdout.isEmpty)
            #expect(strict.stderr.split(separator: "\n").count == 1)
            #expect(strict.stderr.hasPrefix("videofeed feed: error: GET http://127.0.0.1:9/feed.json?token=REDACTED"))
        }
    }

    @Test("failures print one line to stderr and exit non-zero", arguments: [
        (["missing.json"], "videofeed feed: error: cannot read missing.json: no such file or directory"),
        (["bad.json"], "is not a valid feed document: not valid JSON"),
        (["ftp://example.com/a.json"], "videofeed feed: error: unsupported feed source ftp://example.com/a.json"),
        ([], "videofeed feed: error: bundled feed Fixtures/feed.json not found"),
    ])
    func failures(arguments: [String], message: String) throws {
        try withFolder { folder in
            try write("[{", to: folder.appendingPathComponent("bad.json"))
            let run = try feed(arguments + ["--fixtures", folder.appendingPathComponent("nowhere").path], in: folder)
            #expect(run.status == 2)
            #expect(run.stdout.isEmpty)
            #expect(run.stderr.split(separator: "\n").count == 1)
            #expect(run.stderr.contains(message))
        }
    }
}
