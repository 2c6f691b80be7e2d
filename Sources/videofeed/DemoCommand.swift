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
        OUT/<public_id>.framemd5 (hashes of every decoded frame) and OUT/<public_id>-000001.png (its first frame, \
        upright, fitted in 360x640). public_id becomes a path inside OUT as for `thumbs` (no .., no absolute path, \
        no symbolic link leading out of OUT). A failing item is reported and the others go on; the exit status is 1 \
        if any failed, 2 if the feed could not be read.
        """
    )

    @Option(name: .long, help: "A feed manifest file or a folder of media (default: the bundled feed).")
    var feed: String?

    @Option(name: .long, help: "Output folder.")
    var out: String = "demo-out"

    func run() throws {
        let items: [DemoItem]
        let skipped: Int
        let source = feed
        switch BlockingTask.run({ try await DemoItem.load(source) }) {
        case .success(let loaded): (items, skipped) = loaded
        case .failure(let error):
            Console.error("\(Console.safe(feed ?? "bundled feed")): cannot read the feed: \(Console.describe(error))")
            throw ExitCode(2)
        }
        var failures = 0
        let started = Date()
        let folder = OutputFolder(URL(fileURLWithPath: out))
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        } catch {
            Console.error("\(Console.safe(out)): cannot create the output folder: \(SystemErrorText.reason(error))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        // A feed's items are untrusted: only the demuxers of what a feed holds (every frame is still dumped).
        var openOptions = OpenOptions()
        openOptions.allowedFormats = MediaFile.feedFormats
        for item in items {
            // The same rule as thumbs: the id becomes a path that cannot leave OUT, checked again at each write.
            let relative = OutputPath.relative(for: item.publicID)
            do {
                let info = try MediaFile(path: item.path, options: openOptions).info
                try AtomicFile.write(Array(try Console.jsonEncoder().encode(info)),
                                     to: folder.prepare(relative + ".json").path)
                var md5 = DumpRequest(input: item.path, format: .framemd5)
                md5.openOptions = openOptions
                md5.out = try folder.prepare(relative + ".framemd5").path
                let frames = try FrameDumper.run(md5)
                var png = DumpRequest(input: item.path, format: .png)
                png.openOptions = openOptions
                let firstFrame = try folder.prepare(relative + "-000001.png")
                png.out = firstFrame.deletingLastPathComponent().path
                png.fileStem = (relative as NSString).lastPathComponent + "-"
                png.maxFrames = 1
                png.upright = true
                png.box = Size(width: 360, height: 640)
                _ = try FrameDumper.run(png)
                let video = info.primaryVideoStream
                let shown = video.map { "\($0.displaySize)" } ?? "-"
                Console.out(Console.pad(Console.safe(item.publicID), 27) + " " + Console.pad(video?.codec ?? "-", 6) + " "
                            + Console.pad(shown, 9) + " "
                            + String(format: "%5d frames  ", frames) + item.createdAt + "\n")
            } catch {
                failures += 1
                Console.error("\(Console.safe(item.publicID)): \(Console.describe(error))")
            }
        }
        let seconds = Date().timeIntervalSince(started)
        Console.out(String(format: "%d items, %d failed, %.2f s; output in %@/\n", items.count, failures, seconds, out))
        if failures > 0 || skipped > 0 { throw ExitCode(ExitStatus.someFailed) }
    }
}

/// One feed item, as the demo needs it.
struct DemoItem: Sendable {
    var publicID: String
    var createdAt: String
    var path: String

    /// Every item of `source` (see ``FeedSource``), and how many entries were skipped as invalid.
    static func load(_ source: String?) async throws -> (items: [DemoItem], skipped: Int) {
        let iso = ISO8601DateFormatter()
        let page = try await FeedSource.page(source)
        return (page.items.map { item in
            DemoItem(publicID: item.publicID, createdAt: iso.string(from: item.createdAt), path: FeedSource.mediaPath(item))
        }, page.skipped.count)
    }
}
