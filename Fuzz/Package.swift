// swift-tools-version:6.1
// The libFuzzer target for VideoFeedEngine's Media layer, in its own package so normal builds never see it.
// Build and run with scripts/fuzz.sh SECONDS (from the repository root); see docs/reliability.md.
// Built without the fuzzer (`swift build` here), the same executable replays input files: a regression runner.
import PackageDescription

let package = Package(
    name: "VideoFeedFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "VideoFeedEngine", path: "../"),
    ],
    targets: [
        .executableTarget(
            name: "VideoFeedFuzz",
            dependencies: ["CFuzzDriver", .product(name: "Media", package: "VideoFeedEngine")],
            path: "Sources/VideoFeedFuzz"
        ),
        .target(name: "CFuzzDriver", path: "Sources/CFuzzDriver"),
    ],
    swiftLanguageModes: [.v6]
)
