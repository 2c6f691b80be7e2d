// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "VideoFeedEngine",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "EngineSupport", targets: ["EngineSupport"]),
        .library(name: "Media", targets: ["Media"]),
        .library(name: "Feed", targets: ["Feed"]),
        .library(name: "Prefetch", targets: ["Prefetch"]),
        .library(name: "FeedPlayer", targets: ["FeedPlayer"]),
        .library(name: "Thumbnails", targets: ["Thumbnails"]),
        .library(name: "PolicyLab", targets: ["PolicyLab"]),
        .library(name: "Batch", targets: ["Batch"]),
        .library(name: "Transcode", targets: ["Transcode"]),
        .library(name: "FeedServer", targets: ["FeedServer"]),
        .executable(name: "videofeed", targets: ["videofeed"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavfilter libavcodec libswresample libswscale libavutil",
            providers: [
                .apt([
                    "libavformat-dev", "libavfilter-dev", "libavcodec-dev", "libswresample-dev", "libswscale-dev",
                    "libavutil-dev", "pkg-config",
                ]),
                .brew(["ffmpeg"]),
            ]
        ),
        // HEIC and AVIF photos, which FFmpeg 5.1 cannot open: decoded by libheif in Media's still-image path.
        .systemLibrary(
            name: "CHeif",
            pkgConfig: "libheif",
            providers: [.apt(["libheif-dev", "pkg-config"]), .brew(["libheif"])]
        ),
        .target(name: "EngineSupport"),
        .target(name: "Media", dependencies: ["CFFmpeg", "CHeif", "EngineSupport"]),
        .target(name: "Feed", dependencies: ["EngineSupport"]),
        .target(name: "Prefetch", dependencies: ["EngineSupport"]),
        .target(name: "FeedPlayer", dependencies: ["Feed", "Media", "Prefetch", "EngineSupport"]),
        // The one batch engine under `thumbs` and `transcode`: plan, shards, locks, temporaries, workers, records.
        .target(name: "Batch", dependencies: ["Media", "Feed", "EngineSupport"]),
        .target(name: "Thumbnails", dependencies: ["Batch", "Media", "Feed", "EngineSupport"]),
        .target(name: "PolicyLab", dependencies: ["Prefetch", "EngineSupport"]),
        .target(name: "Transcode", dependencies: ["CFFmpeg", "Batch", "Media", "Feed", "EngineSupport"]),
        // The web front end's server: the only engine module with Swift package dependencies (Hummingbird and kin).
        .target(
            name: "FeedServer",
            dependencies: [
                "EngineSupport", "Media", "Feed", "Prefetch", "Thumbnails", "Transcode",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Web")]
        ),
        .executableTarget(
            name: "videofeed",
            dependencies: [
                "EngineSupport",
                "Media",
                "Feed",
                "Prefetch",
                "FeedPlayer",
                "Batch",
                "Thumbnails",
                "PolicyLab",
                "Transcode",
                "FeedServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "TestSupport", dependencies: ["CHeif", "EngineSupport"], path: "Tests/TestSupport"),
        .testTarget(name: "EngineSupportTests", dependencies: ["EngineSupport", "TestSupport"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "Transcode", "TestSupport"]),
        .testTarget(
            name: "FeedTests",
            dependencies: ["Feed", "TestSupport"],
            exclude: ["Samples", "feed_server.py"]
        ),
        .testTarget(name: "PrefetchTests", dependencies: ["Prefetch", "EngineSupport", "TestSupport"]),
        .testTarget(name: "FeedPlayerTests", dependencies: ["FeedPlayer", "Feed", "Media", "Prefetch", "EngineSupport", "TestSupport"]),
        .testTarget(name: "PolicyLabTests", dependencies: ["PolicyLab", "Prefetch", "EngineSupport"], exclude: ["Samples"]),
        .testTarget(name: "ThumbnailsTests", dependencies: ["Thumbnails", "Transcode", "Media", "Feed", "EngineSupport", "TestSupport"]),
        .testTarget(name: "TranscodingTests", dependencies: ["Transcode", "Media", "Feed", "EngineSupport", "TestSupport"]),
        .testTarget(name: "BatchTests", dependencies: ["Batch", "Media", "Feed", "TestSupport"]),
        .testTarget(
            name: "FeedServerTests",
            dependencies: [
                "FeedServer", "Feed", "Media", "Prefetch", "PolicyLab", "Transcode", "EngineSupport", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "videofeedTests", dependencies: ["videofeed", "Media", "Transcode", "FeedPlayer", "PolicyLab", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
