import ArgumentParser
import Dispatch
import EngineSupport
import Feed
import FeedServer
import Foundation
import Media
import PolicyLab
import Prefetch
import Transcode

/// `videofeed simulate calibrate --serve FOLDER --out FILE`: what `videofeed serve` spends making each artifact of
/// every item it lists in FOLDER, measured by running the server's own making code one job at a time, written as a
/// PolicyLab ``ServeCosts`` profile.
///
/// A ``ServeEngine`` with serve's configuration works on a temporary cache (removed at the end); each job goes
/// through ``ServeEngine/makeAlone(_:)``, the path the pool's workers take, on this thread with nothing else running.
/// Each artifact is made `repeats` times, its files deleted before each run (so every run is cold for that artifact
/// while what it needs, such as the manifest and inits for a segment, stays cached), and the least wall time and the
/// least CPU time are kept.
struct ServeCalibration {
    /// The box whose rendition the segments are measured on: the page's default viewer.
    static let viewerBox = (width: 540, height: 960)
    /// Later segments measured per item, at most.
    static let laterSegments = 3

    var folder: String
    var out: String
    var repeats: Int
    var rendition: RenditionOptions
    var mediaPolicy: MediaPolicyOptions

    func run() throws {
        let served = try ServedFolder(folder: folder, order: .name, rendition: rendition, mediaPolicy: mediaPolicy,
                                      command: "calibrate --serve", unlisted: "not listed by serve, not measured")
        defer { served.close() }
        let engine = served.engine, configuration = served.configuration
        var items: [ServeCosts.Item] = []
        var failed = 0
        for (entry, name) in served.items {
            do {
                let item = try measure(entry, name: name, engine: engine)
                items.append(item)
                Console.out(Self.row(item))
            } catch {
                // As serve would show an error card for it: the item is reported and left out.
                Console.error("\(Console.safe(name)): skipped: \(Console.describe(error))")
                failed += 1
            }
            // Its files leave the temporary cache: the next item starts as cold as this one.
            engine.cache.removeFolder(entry.folder)
        }
        guard !items.isEmpty else {
            Console.error("no item of \(Console.safe(folder)) could be measured; nothing written")
            throw ExitCode(1)
        }
        let settings = configuration.settings
        let profile = ServeCosts(
            source: "videofeed simulate calibrate --serve on \(ProcessInfo.processInfo.hostName), "
                + "\(Self.today()), \(Self.buildConfiguration) build, one job at a time, "
                + "best of \(repeats) runs (least wall, least CPU); serve settings: ladder "
                + settings.ladder.map { "\($0.width)x\($0.height)" }.joined(separator: ",")
                + ", segments \(settings.firstSegmentSeconds ?? settings.segmentSeconds)+\(settings.segmentSeconds) s, "
                + "x264 \(settings.video.preset) crf \(settings.video.crf) \(settings.video.threads) thread(s), "
                + "\(settings.threads) decode thread(s); segments of the \(Self.viewerBox.width)x\(Self.viewerBox.height) "
                + "box's rendition",
            cores: ProcessInfo.processInfo.activeProcessorCount, segmentSeconds: settings.segmentSeconds,
            firstSegmentSeconds: settings.firstSegmentSeconds ?? settings.segmentSeconds, items: items)
        do {
            try profile.write(to: URL(fileURLWithPath: out))
        } catch {
            Console.error("calibrate: \(Console.describe(error))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        Console.out("wrote \(Console.safe(out)): \(items.count) item(s)\n")
        if failed > 0 {
            Console.error("\(failed) of \(served.items.count) items could not be measured and are not in the profile")
            throw ExitCode(1)
        }
    }

    /// One item's facts and costs.
    private func measure(_ entry: ServeEngine.ListedItem, name: String, engine: ServeEngine) throws -> ServeCosts.Item {
        let folder = entry.folder, cache = engine.cache
        func job(_ artifact: Artifact) -> () throws -> Void {
            { try engine.makeAlone(JobKey(folder: folder, artifact: artifact)) }
        }
        // A cold manifest: nothing of the item cached (it makes the ladder's inits and first segments too).
        let manifestCost = try best(before: { cache.removeFolder(folder) }, job(.manifest))
        guard let manifest = engine.madeManifest(folder: folder) else {
            throw ServeEngine.Failure.failed("\(name): the manifest job made no manifest")
        }
        let posterCost = try best(before: { cache.discard(ItemFile.poster.key(in: folder)) }, job(.poster))
        let plan = manifest.plan
        let r = manifest.rendition(forBox: Self.viewerBox.width, Self.viewerBox.height)
        let rendition = plan.renditions[r].name
        func segmentKey(_ k: Int) -> String { ItemFile.segment(rendition: rendition, index: k).key(in: folder) }
        func bytes(_ k: Int) -> Int? {
            cache.path(segmentKey(k)).flatMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }
        }
        let firstCost = try best(before: { cache.discard(segmentKey(0)) }, job(.segment(rendition: r, index: 0)))
        var later: [ServeCosts.Cost] = []
        var laterBytes: [Int] = []
        for k in Self.laterIndices(segmentCount: plan.segmentCount) {
            later.append(try best(before: { cache.discard(segmentKey(k)) }, job(.segment(rendition: r, index: k))))
            if let size = bytes(k) { laterBytes.append(size) }
        }
        let segmentCost = later.isEmpty ? firstCost
            : ServeCosts.Cost(wall: later.map(\.wall).reduce(0, +) / Double(later.count),
                              cpu: later.map(\.cpu).reduce(0, +) / Double(later.count))
        let sizes = later.isEmpty ? bytes(0).map { [$0] } ?? [] : laterBytes
        return ServeCosts.Item(
            name: name, width: plan.displayWidth, height: plan.displayHeight, duration: plan.duration,
            segmentStarts: (0..<plan.segmentCount).map { plan.grid.start($0) },
            renditions: plan.renditions.map(\.name), hasAudio: plan.hasAudio, manifest: manifestCost,
            poster: posterCost, firstSegment: firstCost, segment: segmentCost,
            segmentBytes: sizes.isEmpty ? nil : sizes.reduce(0, +) / sizes.count, measuredRendition: rendition)
    }

    /// The later segments measured: up to ``laterSegments`` spread over the full-length ones (1 through the one
    /// before the last, which may be short), first, middle and last of them; the last segment when it is the only
    /// later one.
    static func laterIndices(segmentCount n: Int) -> [Int] {
        guard n >= 2 else { return [] }
        let full = Array(1..<(n - 1))
        guard !full.isEmpty else { return [n - 1] }
        guard full.count > laterSegments else { return full }
        return (0..<laterSegments).map { full[$0 * (full.count - 1) / (laterSegments - 1)] }
    }

    /// The best of `repeats` runs of `job`, each after `before` (which deletes the artifact's files): the least wall
    /// seconds and the least CPU-seconds (this process's user and system time, every thread).
    private func best(before: () -> Void, _ job: () throws -> Void) throws -> ServeCosts.Cost {
        var best = ServeCosts.Cost(wall: .infinity, cpu: .infinity)
        for _ in 0..<repeats {
            before()
            let wall = Self.wallClock(), cpu = Self.cpuSeconds()
            try job()
            best.wall = min(best.wall, Self.wallClock() - wall)
            best.cpu = min(best.cpu, Self.cpuSeconds() - cpu)
        }
        return best
    }

    /// How this binary was built (SwiftPM defines `DEBUG` in debug builds): a debug build's Swift code is slower,
    /// FFmpeg's and x264's the same.
    #if DEBUG
    static let buildConfiguration = "debug"
    #else
    static let buildConfiguration = "release"
    #endif

    private static func wallClock() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// User plus system CPU-seconds of the whole process so far (`getrusage(RUSAGE_SELF)`).
    private static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    private static func today() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: Date())
    }

    /// The table's line for `item`: its size, duration, segments and rendition measured, then wall / CPU
    /// milliseconds of each job.
    static func row(_ item: ServeCosts.Item) -> String {
        func ms(_ c: ServeCosts.Cost) -> String { String(format: "%5.0f/%-5.0f", c.wall * 1000, c.cpu * 1000) }
        let facts = Console.pad(Console.safe(item.name), 24) + " " + Console.pad("\(item.width)x\(item.height)", 9)
            + String(format: " %6.2f s %3d segs ", item.duration, item.segmentStarts.count)
            + Console.pad(item.measuredRendition ?? "", 8)
        let costs = "  manifest \(ms(item.manifest))  poster \(ms(item.poster))  seg0 \(ms(item.firstSegment))"
            + "  seg \(ms(item.segment)) ms wall/cpu" + (item.segmentBytes.map { ", \($0) B/seg" } ?? "")
        return facts + costs + "\n"
    }
}
