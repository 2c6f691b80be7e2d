import ArgumentParser
import Feed
import Foundation
import Media

/// `videofeed demo`: the main job on the bundled feed — what `make demo` runs.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Probe every item of a feed manifest and dump its frames into a folder.",
        discussion: """
        For each item of the feed (default: the bundled feed, Fixtures/feed.json) writes OUT/<public_id>.json (probe), \
        OUT/<public_id>.framemd5 (hashes of every decoded frame) and OUT/<public_id>.png (its first frame, upright, \
        fitted in 360x640). A failing item is reported and the others go on; the exit status is non-zero if any failed.
        """
    )

    @Option(name: .long, help: "A feed manifest file or a folder of media (default: the bundled feed).")
    var feed: String?

    @Option(name: .long, help: "Output folder.")
    var out: String = "demo-out"

    func run() throws {
        let items: [DemoItem]
        let source = feed
        switch BlockingTask.run({ try await DemoItem.load(source) }) {
        case .success(let loaded): items = loaded
        case .failure(let error):
            Console.error("\(feed ?? "bundled feed"): cannot read the feed: \(error)")
            throw ExitCode(1)
        }
        var failures = 0
        let started = Date()
        for item in items {
            let base = (out as NSString).appendingPathComponent(item.publicID)
            do {
                try FileManager.default.createDirectory(
                    atPath: (base as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                let info = try MediaFile(path: item.path).info
                try AtomicFile.write(Array(try Console.jsonEncoder().encode(info)), to: base + ".json")
                var md5 = DumpRequest(input: item.path, format: .framemd5)
                md5.out = base + ".framemd5"
                let frames = try FrameDumper.run(md5)
                var png = DumpRequest(input: item.path, format: .png)
                png.out = (base as NSString).deletingLastPathComponent
                png.fileStem = (item.publicID as NSString).lastPathComponent + "-"
                png.maxFrames = 1
                png.upright = true
                png.box = Size(width: 360, height: 640)
                _ = try FrameDumper.run(png)
                let video = info.primaryVideoStream
                let shown = video.map { "\($0.displaySize)" } ?? "-"
                Console.out(Console.pad(item.publicID, 27) + " " + Console.pad(video?.codec ?? "-", 6) + " "
                            + Console.pad(shown, 9) + " "
                            + String(format: "%5d frames  ", frames) + item.createdAt + "\n")
            } catch {
                failures += 1
                Console.error("\(item.publicID): \(Console.describe(error))")
            }
        }
        let seconds = Date().timeIntervalSince(started)
        Console.out(String(format: "%d items, %d failed, %.2f s; output in %@/\n", items.count, failures, seconds, out))
        if failures > 0 { throw ExitCode(1) }
    }
}

/// One feed item, as the demo needs it.
struct DemoItem: Sendable {
    var publicID: String
    var createdAt: String
    var path: String

    /// Every item of `source` (see ``FeedSource``).
    static func load(_ source: String?) async throws -> [DemoItem] {
        let iso = ISO8601DateFormatter()
        return try await FeedSource.items(source).map { item in
            DemoItem(publicID: item.publicID, createdAt: iso.string(from: item.createdAt), path: FeedSource.mediaPath(item))
        }
    }
}
