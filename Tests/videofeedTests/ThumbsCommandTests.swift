import Foundation
import Media
import TestSupport
import Testing

/// `videofeed thumbs`, run as the built binary: files, cards, exit status, and a batch killed with SIGKILL.
@Suite struct ThumbsCommandTests {
    let cli = TestFixtures.cli

    /// Every card line parses as a JSON object with a public_id, and every listed thumbnail decodes via Media.
    func checkOutputs(_ out: URL, cardFile: String = "cards.jsonl") throws -> Int {
        let text = try String(contentsOf: out.appendingPathComponent(cardFile), encoding: .utf8)
        var count = 0
        for line in text.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["public_id"] is String)
            for path in object["thumbnails"] as? [String] ?? [] {
                let file = try MediaFile(path: out.appendingPathComponent(path).path)
                let decoder = try VideoDecoder(file: file)
                #expect(try decoder.nextFrame() != nil, "\(path)")
            }
            count += 1
        }
        return count
    }

    @Test("thumbs on the bundled feed writes a card per item and a summary line")
    func bundledFeed() throws {
        let out = try TestFixtures.temporaryFolder("thumbs-cli")
        let result = try run(cli, ["thumbs", "--fixtures", TestFixtures.folder.path, "--out", out.path, "--quiet"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("thumbs: 15 items, 15 rendered, 0 skipped, 0 failed"), "\(result.stdout)")
        #expect(try checkOutputs(out) == 15)
        let again = try run(cli, ["thumbs", "--fixtures", TestFixtures.folder.path, "--out", out.path, "--json"])
        #expect(again.status == 0)
        #expect(again.stdout.contains("\"skipped\":15"), "\(again.stdout)")
    }

    @Test("a failing item makes the exit status 1 and is named on stderr")
    func failingItem() throws {
        let folder = try TestFixtures.temporaryFolder("thumbs-cli-bad")
        try FileManager.default.copyItem(atPath: TestFixtures.bad("random.mp4"),
                                         toPath: folder.appendingPathComponent("random.mp4").path)
        try FileManager.default.copyItem(atPath: TestFixtures.media("hevc.mp4"),
                                         toPath: folder.appendingPathComponent("hevc.mp4").path)
        let out = folder.appendingPathComponent("out")
        let result = try run(cli, ["thumbs", folder.path, "--out", out.path, "-q"])
        #expect(result.status == 1)
        #expect(result.stdout.contains("1 failed"))
        #expect(result.stderr.contains("random: cannot render a thumbnail"), "\(result.stderr)")
    }

    @Test("shards via --shard and merge give every card once")
    func shardsAndMerge() throws {
        let out = try TestFixtures.temporaryFolder("thumbs-cli-shards")
        for i in 0..<3 {
            let result = try run(cli, ["thumbs", "--fixtures", TestFixtures.folder.path, "--out", out.path,
                                       "--shard", "\(i)/3", "-q"])
            #expect(result.status == 0, "\(result.stderr)")
        }
        let merged = try run(cli, ["thumbs", "merge", "--out", out.path])
        #expect(merged.status == 0 && merged.stdout.contains("15 cards"), "\(merged.stdout) \(merged.stderr)")
        #expect(try checkOutputs(out) == 15)
    }

    @Test("invalid options are rejected with a usage error",
          arguments: [["--at", "200%"], ["--sheet", "0x2"], ["--shard", "3/3"], ["--format", "gif"], ["--jobs", "0"]])
    func invalidOptions(arguments: [String]) throws {
        let result = try run(cli, ["thumbs", "--out", "/tmp/never"] + arguments)
        #expect(result.status == 2, "\(result.stderr)")
    }

    @Test("a batch killed with SIGKILL, then rerun, completes with no corrupt image and no torn card line")
    func killAndRerun() throws {
        let folder = try TestFixtures.temporaryFolder("thumbs-kill")
        let media = folder.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        let sources = ["hevc.mp4", "vp9.webm", "h264_portrait.mp4", "rotate90.mp4", "black_start.mp4"]
        let count = 150
        for i in 0..<count {
            let name = sources[i % sources.count]
            try FileManager.default.copyItem(atPath: TestFixtures.media(name),
                                             toPath: media.appendingPathComponent("c\(i)-\(name)").path)
        }
        let out = folder.appendingPathComponent("out")
        let arguments = ["thumbs", media.path, "--out", out.path, "--jobs", "2", "--sheet", "4x4", "--format", "png",
                         "-q"]
        let process = Process()
        process.executableURL = cli
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Kill once some items are done but long before all are.
        var written = 0
        for _ in 0..<600 where written < 12 {
            usleep(20_000)
            written = (FileManager.default.enumerator(atPath: out.path)?.allObjects as? [String] ?? [])
                .filter { $0.hasSuffix(".png") }.count
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        // Killed mid-run: no card file yet, or a whole one whose every card and image reads (never half-written).
        let cardFile = out.appendingPathComponent("cards.jsonl").path
        let cardsAfterKill = FileManager.default.fileExists(atPath: cardFile) ? try checkOutputs(out) : 0
        #expect(cardsAfterKill < count)
        let rerun = try run(cli, arguments)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(try checkOutputs(out) == count)
        let leftovers = (FileManager.default.enumerator(atPath: out.path)?.allObjects as? [String] ?? [])
        let images = leftovers.filter { $0.hasSuffix(".png") }
        #expect(images.count == count)
        for image in images {
            let decoder = try VideoDecoder(file: try MediaFile(path: out.appendingPathComponent(image).path))
            #expect(try decoder.nextFrame() != nil, "\(image)")
        }
    }
}
