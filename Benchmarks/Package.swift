// swift-tools-version:6.1
// Benchmarks for VideoFeedEngine, in their own package so the library never depends on the benchmark framework.
// Run from this folder: swift package --allow-writing-to-package-directory benchmark
import PackageDescription

let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "VideoFeedEngine", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "MediaDecode",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Media", package: "VideoFeedEngine"),
            ],
            path: "Benchmarks/MediaDecode",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "FeedPlayerSwipe",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Media", package: "VideoFeedEngine"),
                .product(name: "Feed", package: "VideoFeedEngine"),
                .product(name: "Prefetch", package: "VideoFeedEngine"),
                .product(name: "FeedPlayer", package: "VideoFeedEngine"),
                .product(name: "PolicyLab", package: "VideoFeedEngine"),
            ],
            path: "Benchmarks/FeedPlayerSwipe",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "PolicyLabSimulate",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "PolicyLab", package: "VideoFeedEngine"),
                .product(name: "Prefetch", package: "VideoFeedEngine"),
            ],
            path: "Benchmarks/PolicyLabSimulate",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // cancel-latency.sh: how soon a blocked open returns when cancelled or timed out (a plain executable).
        .executableTarget(
            name: "CancelLatency",
            dependencies: [.product(name: "Media", package: "VideoFeedEngine"),
                           .product(name: "EngineSupport", package: "VideoFeedEngine")],
            path: "Benchmarks/CancelLatency"
        ),
        // The bare-loop baseline of compare-thumbs.sh (a plain executable, not an ordo-one benchmark).
        .executableTarget(
            name: "ThumbsLoop",
            dependencies: [.product(name: "Media", package: "VideoFeedEngine")],
            path: "Benchmarks/ThumbsLoop"
        ),
    ],
    swiftLanguageModes: [.v6]
)
