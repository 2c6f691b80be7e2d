import Benchmark
import Foundation
import Media

/// Decode throughput of the Media layer on the 1080x1920 30 fps H.264 clip of 30 s made by
/// `Fixtures/generate.sh --bench`. One iteration decodes the whole clip; "decoded frames/s" is the figure to compare
/// with `ffmpeg -threads N -i F -f null -` (Benchmarks/compare-decode.sh runs both side by side).
let benchmarks: @Sendable () -> Void = {
    let clip = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/bench/bench_1080x1920_30s.mp4").path
    guard FileManager.default.fileExists(atPath: clip) else {
        fatalError("missing \(clip): run `bash Fixtures/generate.sh --bench` first")
    }
    let threads = Int(ProcessInfo.processInfo.environment["BENCH_THREADS"] ?? "") ?? ProcessInfo.processInfo.activeProcessorCount
    let framesPerSecond = BenchmarkMetric.custom("decoded frames/s", polarity: .prefersLarger, useScalingFactor: false)

    Benchmark(
        "Decode 1080x1920 H.264 30 s (\(threads) threads)",
        configuration: .init(metrics: [.wallClock, .cpuTotal, .peakMemoryResident, .mallocCountTotal, framesPerSecond],
                             timeUnits: .milliseconds, warmupIterations: 1, scalingFactor: .one,
                             maxDuration: .seconds(120), maxIterations: 5)
    ) { benchmark in
        let started = DispatchTime.now().uptimeNanoseconds
        let decoder = try VideoDecoder(file: MediaFile(path: clip), options: DecoderOptions(threadCount: threads))
        var frames = 0
        while let frame = try decoder.nextFrame() {
            blackHole(frame)
            frames += 1
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        benchmark.measurement(framesPerSecond, Int((Double(frames) / seconds).rounded()))
    }

    // Converting one decoded 1080x1920 frame to the player's 720x1280 BGRA, with and without libswscale's accurate
    // rounding (FrameConverter's `scaling`), side by side on the same frame.
    let frame: VideoFrame = {
        let decoder = try! VideoDecoder(file: MediaFile(path: clip), options: DecoderOptions(threadCount: 1))
        return try! decoder.nextFrame()!
    }()
    for scaling in [ScalingQuality.accurate, .fast] {
        Benchmark(
            "Convert 1080x1920 yuv420p to 720x1280 BGRA (\(scaling.rawValue))",
            configuration: .init(metrics: [.wallClock, .cpuTotal], timeUnits: .microseconds, warmupIterations: 5,
                                 scalingFactor: .one, maxDuration: .seconds(20), maxIterations: 200)
        ) { benchmark in
            let converter = FrameConverter(pixelFormat: .bgra, fittingIn: Size(width: 720, height: 1280),
                                           scaling: scaling)
            blackHole(try converter.convert(frame))
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(try converter.convert(frame)) }
            benchmark.stopMeasurement()
        }
    }
}
