import Foundation
import Testing
@testable import Feed

@Suite("Manifest and bundled loaders")
struct LocalFileLoaderTests {
    let feedJSON = """
        [{"public_id": "fixtures/h264_portrait", "created_at": "2026-11-01T10:00:00Z",
          "url": "media/h264_portrait.mp4", "format": "mp4", "bytes": 1234, "width": 720, "height": 1280,
          "duration": 2.0}]
        """

    @Test("a relative url resolves against the manifest file's own folder, wherever the reader runs")
    func relativeToManifest() async throws {
        try await withTemporaryDirectory { directory async throws in
            let file = try directory.write("deep/feeds/feed.json", feedJSON)
            let page = try await ManifestFeedLoader(file: file).loadPage(at: nil)
            let expected = directory.url.appendingPathComponent("deep/feeds/media/h264_portrait.mp4")
            #expect(page.items.map(\.source) == [expected.standardizedFileURL])
            #expect(try await ManifestFeedLoader(file: file).loadPage(at: .page(2)) == .end)
        }
    }

    @Test("each committed sample loads through the manifest loader", arguments: [
        ("manifest.json", FeedFormat.manifest, 3), ("manifest.jsonl", .manifest, 2),
        ("cloudinary.json", .cloudinary, 3), ("pexels.json", .pexels, 2), ("imagefeed.json", .imagefeed, 3),
    ])
    func samples(name: String, format: FeedFormat, count: Int) async throws {
        let detected = try await ManifestFeedLoader(file: Samples.url(name)).loadPage(at: nil)
        let forced = try await ManifestFeedLoader(file: Samples.url(name), format: format).loadPage(at: nil)
        #expect(detected.items.count == count)
        #expect(forced == detected)
    }

    @Test("a saved page of a paged API notes that it is not followed; Pexels dates are the file's mtime")
    func savedPage() async throws {
        let page = try await ManifestFeedLoader(file: Samples.url("pexels.json")).loadPage(at: nil)
        #expect(page.nextCursor == nil)
        #expect(page.warnings.count == 1)
        let modified = try FileManager.default.attributesOfItem(atPath: Samples.url("pexels.json").path)[
            .modificationDate] as? Date
        #expect(page.items.first?.createdAt == modified)
    }

    @Test("a missing file is a typed error naming the path")
    func missingFile() async throws {
        let loader = ManifestFeedLoader(file: URL(fileURLWithPath: "/nonexistent/feed.json"))
        await #expect(throws: FeedError.unreadable(path: "/nonexistent/feed.json", reason: "no such file")) {
            try await loader.loadPage(at: nil)
        }
    }

    @Test("the bundled feed is found above the current directory, by explicit path, or by VIDEOFEED_FIXTURES")
    func bundledLocations() async throws {
        try await withTemporaryDirectory { directory async throws in
            let feed = try directory.write("project/Fixtures/feed.json", feedJSON)
            let nested = directory.url.appendingPathComponent("project/Sources/deep", isDirectory: true)
            try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)
            let elsewhere = directory.url.appendingPathComponent("elsewhere", isDirectory: true)
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)

            let walking = BundledFeedLoader(environment: [:], currentDirectory: nested, executable: nil)
            #expect(try walking.locate() == feed.standardizedFileURL)
            let fromExecutable = BundledFeedLoader(
                environment: [:], currentDirectory: elsewhere,
                executable: directory.url.appendingPathComponent("project/.build/debug/videofeed"))
            #expect(try fromExecutable.locate() == feed.standardizedFileURL)
            let explicit = BundledFeedLoader(
                explicitPath: feed.deletingLastPathComponent().path, environment: [:],
                currentDirectory: elsewhere, executable: nil)
            #expect(try explicit.locate() == feed.standardizedFileURL)
            let environment = BundledFeedLoader(
                environment: ["VIDEOFEED_FIXTURES": feed.path], currentDirectory: elsewhere, executable: nil)
            #expect(try environment.locate() == feed.standardizedFileURL)

            let page = try await walking.loadPage(at: nil)
            #expect(page.items.first?.source
                == feed.deletingLastPathComponent().appendingPathComponent("media/h264_portrait.mp4"))
        }
    }

    @Test("a bundled feed that is nowhere, or not where VIDEOFEED_FIXTURES says, is a typed error")
    func bundledMissing() async throws {
        try await withTemporaryDirectory { directory async throws in
            let nowhere = BundledFeedLoader(environment: [:], currentDirectory: directory.url, executable: nil)
            #expect(throws: FeedError.bundledFeedNotFound(searched: [
                "Fixtures/feed.json in \(directory.url.standardizedFileURL.path) and above",
            ])) { try nowhere.locate() }
            let wrong = BundledFeedLoader(
                environment: ["VIDEOFEED_FIXTURES": "/nonexistent"], currentDirectory: directory.url, executable: nil)
            #expect(throws: FeedError.bundledFeedNotFound(searched: ["VIDEOFEED_FIXTURES=/nonexistent"])) {
                try wrong.locate()
            }
        }
    }
}
