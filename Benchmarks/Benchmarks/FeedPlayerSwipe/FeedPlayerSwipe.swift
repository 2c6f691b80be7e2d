import Benchmark
import Feed
import FeedPlayer
import Foundation
import Media
import PolicyLab
import Prefetch

/// Swipe latency of the live engine on 1080x1920 H.264 (the `Fixtures/generate.sh --bench` clip), displayed at
/// 720x1280 BGRA, next to the bare path a player without prefetching takes: open + decoder + first frame + convert.
/// Also 1,000 random swipes under a 256 MiB budget: peak decoded bytes and resident memory.
///
/// The hit here is the floor of a swipe: the player is settled (every prefetch done, nothing running) before each
/// one. A viewer's swipes land while the player works; their latency is `Benchmarks/playback-smoothness.sh`'s live
/// random session on real clips, the figure docs/benchmarks.md leads with.
let benchmarks: @Sendable () -> Void = {
    let clip = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/bench/bench_1080x1920_30s.mp4")
    guard FileManager.default.fileExists(atPath: clip.path) else {
        fatalError("missing \(clip.path): run `bash Fixtures/generate.sh --bench` first")
    }
    let feed = (0..<400).map {
        FeedItem(publicID: "bench/\($0)", createdAt: Date(timeIntervalSince1970: Double($0)), source: clip)
    }
    var configuration = FeedPlayerConfiguration()
    configuration.displaySize = Size(width: 720, height: 1280)
    configuration.pixelFormat = .bgra
    configuration.memoryBudget = 256 * 1024 * 1024
    let latency = Benchmark.Configuration(metrics: [.wallClock], timeUnits: .microseconds, warmupIterations: 2,
                                          scalingFactor: .one, maxDuration: .seconds(120), maxIterations: 200)

    // One player per benchmark, made on its first iteration and kept across iterations, as a front end keeps it.
    let hitPlayer = PlayerBox(feed: feed, configuration: configuration)
    Benchmark("Swipe to a settled neighbour (hit, player idle)", configuration: latency) { benchmark in
        let player = hitPlayer.player
        for _ in benchmark.scaledIterations {
            player.settle(timeout: 60)
            benchmark.startMeasurement()
            let frame = player.next().frame
            benchmark.stopMeasurement()
            precondition(frame != nil, "a settled neighbour must be a hit")
        }
    }

    let missPlayer = PlayerBox(feed: feed, configuration: configuration)
    Benchmark("Swipe to a cold item (miss, player idle) until its first frame", configuration: latency) { benchmark in
        let player = missPlayer.player
        for _ in benchmark.scaledIterations {
            player.settle(timeout: 60)
            let target = (player.currentIndex + 10) % feed.count
            benchmark.startMeasurement()
            if case .loading = player.move(to: target) {
                _ = player.waitForFirstFrame(of: target, timeout: 60)
            }
            benchmark.stopMeasurement()
        }
    }

    Benchmark("Bare open + first frame + convert (no prefetch)", configuration: latency) { benchmark in
        for _ in benchmark.scaledIterations {
            // The same open options (stream information from the header) and decoder options as the player's.
            let file = try MediaFile(path: clip.path, options: configuration.openOptions)
            let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: configuration.decoderThreads))
            let converter = FrameConverter(pixelFormat: .bgra, fittingIn: configuration.displaySize,
                                           orientation: decoder.stream.orientation, scaling: configuration.scaling)
            let frame = try decoder.nextFrame()!
            blackHole(try converter.convert(frame))
        }
    }

    let peakDecoded = BenchmarkMetric.custom("peak decoded MiB", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark("1,000 random swipes, 256 MiB budget",
              configuration: .init(metrics: [.wallClock, .peakMemoryResident, peakDecoded], timeUnits: .seconds,
                                   warmupIterations: 0, scalingFactor: .one, maxDuration: .seconds(300),
                                   maxIterations: 1)) { benchmark in
        let player = FeedPlayer(feed: feed, configuration: configuration)
        player.start(at: 0)
        var rng = SimRandom(seed: 1)  // the same 1,000 swipes and dwell times in every run
        var index = 0
        for _ in 0..<1000 {
            let r = Int.random(in: 0..<100, using: &rng)
            index = r < 80 ? index + 1 : (r < 95 ? index - 1 : Int.random(in: 0..<feed.count, using: &rng))
            index = min(max(index, 0), feed.count - 1)
            player.move(to: index)
            Thread.sleep(forTimeInterval: Double(Int.random(in: 0...30, using: &rng)) / 1000)
        }
        player.settle(timeout: 60)
        let metrics = player.metrics
        precondition(metrics.peakDecodedBytes <= metrics.memoryBudget, "budget exceeded")
        benchmark.measurement(peakDecoded, metrics.peakDecodedBytes / (1024 * 1024))
        player.shutdown()
    }
}

/// Makes a player on first use. `@unchecked Sendable`: `made` is only touched under `lock`.
final class PlayerBox: @unchecked Sendable {
    private let lock = NSLock()
    private var made: FeedPlayer?
    private let feed: [FeedItem]
    private let configuration: FeedPlayerConfiguration

    init(feed: [FeedItem], configuration: FeedPlayerConfiguration) {
        self.feed = feed
        self.configuration = configuration
    }

    var player: FeedPlayer {
        lock.withLock {
            if let made { return made }
            let player = FeedPlayer(feed: feed, configuration: configuration)
            player.start(at: 0)
            made = player
            return player
        }
    }
}
