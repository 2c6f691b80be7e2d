import ArgumentParser
import Foundation
import Media

/// `videofeed demo`: the main job on the bundled feed — what `make demo` runs.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Probe every item of a feed manifest and dump its frames into a folder.",
        discussion: """
        For each item of the feed (default: Fixtures/feed.json) writes OUT/<public_id>.json (probe), \
        OUT/<public_id>.framemd5 (hashes of every decoded frame) and OUT/<public_id>.png (its first frame, upright, \
        fitted in 360x640). A failing item is reported and the others go on; the exit status is non-zero if any failed.
        """
    )

    @Option(name: .long, help: "The feed manifest: a JSON array of {\"public_id\", \"created_at\", \"url\"}.")
    var feed: String = "Fixtures/feed.json"

    @Option(name: .long, help: "Output folder.")
    var out: String = "demo-out"

    func run() throws {
        let items: [DemoItem]
        do {
            items = try DemoItem.load(manifest: feed)
        } catch {
            Console.error("\(feed): cannot read the feed: \(error)")
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
                Console.out(String(format: "%-28@ %-6@ %-10@ %5d frames  %@\n",
                                   item.publicID as NSString, (video?.codec ?? "-") as NSString,
                                   shown as NSString, frames, item.createdAt as NSString))
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

/// One entry of the bundled manifest, as the demo needs it.
struct DemoItem {
    var publicID: String
    var createdAt: String
    var path: String

    static func load(manifest: String) throws -> [DemoItem] {
        let data = try Data(contentsOf: URL(fileURLWithPath: manifest))
        guard let array = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] else {
            throw ValidationError("not a JSON array of objects")
        }
        let folder = (manifest as NSString).deletingLastPathComponent
        return array.compactMap { entry in
            guard let id = entry["public_id"] as? String, let url = entry["url"] as? String else { return nil }
            let path = url.contains("://") || url.hasPrefix("/") ? url : (folder as NSString).appendingPathComponent(url)
            return DemoItem(publicID: id, createdAt: entry["created_at"] as? String ?? "", path: path)
        }
    }
}
