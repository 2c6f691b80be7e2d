import EngineSupport
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

    @Test func sigtermAnswersTheRequestsUnderWayBeforeTheServerStops() throws {
        let feed = try TestFixtures.temporaryFolder("serve-term-feed")
        try FileManager.default.copyItem(atPath: TestFixtures.media("h264_portrait.mp4"),
                                         toPath: feed.appendingPathComponent("clip.mp4").path)
        let cache = try TestFixtures.temporaryFolder("serve-term-busy")
        let served = try Served(cli, [feed.path, "--cache", cache.path, "--workers", "1", "--refresh", "0"])
        let listing = try JSONSerialization.jsonObject(with: Data(try served.get("/api/feed?limit=1").body))
        let card = try #require(((listing as? [String: Any])?["resources"] as? [[String: Any]])?.first)
        let mp4 = try #require((card["renditions"] as? [[String: Any]])?.first?["mp4"] as? String)
        // A cold MP4 (a job of about a second), asked for on another thread; SIGTERM once its job runs.
        let answer = Locked<Result<LoopbackHTTP.Answer, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0), port = served.port
        DispatchQueue.global().async {
            answer.set(Result { try LoopbackHTTP.request(port, mp4) })
            done.signal()
        }
        let running = waitFor(seconds: 60) {
            guard let text = try? served.get("/metrics").text,
                  let line = text.split(separator: "\n").first(where: { $0.hasPrefix("videofeed_jobs_running ") }),
                  let value = Double(line.split(separator: " ").last ?? "") else { return false }
            return value > 0
        }
        try #require(running, "the MP4's job never started")
        kill(served.process.processIdentifier, SIGTERM)
        #expect(done.wait(timeout: .now() + 60) == .success)
        let got = try #require(try answer.get()?.get())
        #expect(got.status == 200)
        #expect(got.headers["content-length"] == String(got.body.count))
        let cached = try Data(contentsOf: cache.appendingPathComponent(String(mp4.dropFirst("/media/".count))))
        #expect(got.body == [UInt8](cached), "the answer is the whole MP4 the job made")
        served.process.waitUntilExit()
        #expect(served.process.terminationStatus == 0)
    }

    @Test func badOptionsAreRefused() throws {
        let result = try run(cli, ["serve", "--port", "70000"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--port"))
        let grace = try run(cli, ["serve", "--shutdown-grace", "-1"])
        #expect(grace.status == 2)
        #expect(grace.stderr.contains("--shutdown-grace"))
    }
}
