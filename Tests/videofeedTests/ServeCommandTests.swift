import Foundation
import TestSupport
import Testing

/// `videofeed serve` as the built binary: two replicas on one cache folder both serve every item, and SIGTERM stops
/// a server cleanly.
@Suite(.serialized) struct ServeCommandTests {
    let cli = TestFixtures.cli

    /// A running `videofeed serve` on a free port.
    final class Served {
        let process = Process()
        let port: Int
        private let output: Pipe

        init(_ cli: URL, _ arguments: [String]) throws {
            process.executableURL = cli
            process.arguments = ["serve"] + arguments + ["--port", "0", "--log-level", "error"]
            output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            // "listening on http://127.0.0.1:PORT/"
            var text = ""
            let handle = output.fileHandleForReading
            while !text.contains("\n") {
                let data = handle.availableData
                guard !data.isEmpty else { break }
                text += String(decoding: data, as: UTF8.self)
            }
            guard let range = text.range(of: "127.0.0.1:"),
                  let port = Int(text[range.upperBound...].prefix { $0.isNumber }) else {
                process.terminate()
                throw POSIXError(.EIO)
            }
            self.port = port
        }

        func get(_ path: String) throws -> LoopbackHTTP.Answer { try LoopbackHTTP.request(port, path) }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test func twoReplicasOnOneCacheFolderServeEveryItem() throws {
        let feed = try TestFixtures.temporaryFolder("serve-replicas")
        for (n, name) in ["h264_portrait.mp4", "hevc.mp4", "vp9.webm", "animated.gif", "image.jpg"].enumerated() {
            try FileManager.default.copyItem(atPath: TestFixtures.media(name),
                                             toPath: feed.appendingPathComponent("\(n)-\(name)").path)
        }
        let cache = try TestFixtures.temporaryFolder("serve-shared-cache")
        let a = try Served(cli, [feed.path, "--cache", cache.path, "--workers", "1"])
        let b = try Served(cli, [feed.path, "--cache", cache.path, "--workers", "1"])
        let listing = try JSONSerialization.jsonObject(with: Data(try a.get("/api/feed?limit=50").body)) as? [String: Any]
        let cards = try #require(listing?["resources"] as? [[String: Any]])
        #expect(cards.count == 5)
        var paths: [String] = []
        for card in cards {
            #expect(card["error"] == nil, "\(card)")
            paths.append(try #require(card["poster"] as? String))
            for rendition in card["renditions"] as? [[String: Any]] ?? [] {
                paths.append(try #require(rendition["init"] as? String))
                paths += rendition["segments"] as? [String] ?? []
            }
        }
        // Both replicas answer every file at the same URL with the same bytes, whichever made it; half-made files
        // are never visible to the other (writes are renamed into place).
        for (n, path) in paths.enumerated() {
            let (first, second) = n % 2 == 0 ? (a, b) : (b, a)
            let one = try first.get(path)
            let other = try second.get(path)
            #expect(one.status == 200 && other.status == 200, "\(path)")
            #expect(one.body == other.body, "\(path)")
            #expect(one.headers["etag"] == other.headers["etag"], "\(path)")
        }
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: cache.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    @Test func sigtermStopsTheServerCleanly() throws {
        let cache = try TestFixtures.temporaryFolder("serve-term")
        let served = try Served(cli, [TestFixtures.folder.appendingPathComponent("feed.json").path, "--cache", cache.path])
        #expect(try served.get("/healthz").text == "ok\n")
        kill(served.process.processIdentifier, SIGTERM)
        served.process.waitUntilExit()
        #expect(served.process.terminationStatus == 0)
    }

    @Test func badOptionsAreRefused() throws {
        let result = try run(cli, ["serve", "--port", "70000"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--port"))
    }
}
