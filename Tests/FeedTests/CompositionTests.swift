import Foundation
import Testing
@testable import Feed

@Suite("Caching and fallback")
struct CompositionTests {
    let bundledJSON = """
        [{"public_id": "bundled/clip", "created_at": "2026-01-01T00:00:00Z", "url": "media/clip.mp4"}]
        """

    /// remote → cache (in `cacheFolder`) → bundled (`Fixtures/feed.json` under `root`), as the CLI composes them.
    func chain(remote: URL, cacheFolder: URL, root: URL) -> FallbackFeedLoader {
        RemoteFeedLoader(url: remote, format: .manifest, retry: .never)
            .cached(in: DiskFeedPageCache(directory: cacheFolder))
            .withFallback(BundledFeedLoader(explicitPath: root.appendingPathComponent("Fixtures").path))
    }

    @Test("remote first; then the cache, also after a restart; then the bundled feed; then a typed error")
    func fallbackOrder() async throws {
        try await withFeedServer { server async throws in
            try await withTemporaryDirectory { directory async throws in
                try directory.write("Fixtures/feed.json", bundledJSON)
                let cache = directory.url.appendingPathComponent("cache", isDirectory: true)
                let healthy = server.url("/manifest.json")
                let broken = server.url("/unavailable/a")

                // 1. The remote answers: its items, no warnings, and the page is now cached.
                let fresh = try await chain(remote: healthy, cacheFolder: cache, root: directory.url).loadPage(at: nil)
                #expect(fresh.items.map(\.publicID) == ["remote/one", "remote/two"])
                #expect(fresh.warnings.isEmpty)

                // 2. A new process (new loader instances, same cache folder) whose remote fails: the cached page.
                let cached = try await chain(remote: broken, cacheFolder: cache, root: directory.url)
                    .loadPage(at: nil)
                #expect(cached.items == fresh.items)
                #expect(cached.warnings.count == 1)
                #expect(cached.warnings.first?.contains("HTTP 503") == true)
                #expect(cached.warnings.first?.contains("using the cached copy saved") == true)

                // 3. Remote fails and nothing is cached: the bundled feed, with the reason.
                let empty = directory.url.appendingPathComponent("empty-cache", isDirectory: true)
                let bundled = try await chain(remote: broken, cacheFolder: empty, root: directory.url)
                    .loadPage(at: nil)
                #expect(bundled.items.map(\.publicID) == ["bundled/clip"])
                #expect(bundled.warnings.first?.contains("using the fallback feed") == true)

                // 4. Nothing works: one error listing both reasons.
                let nowhere = directory.url.appendingPathComponent("nowhere")
                do {
                    _ = try await chain(remote: broken, cacheFolder: empty, root: nowhere).loadPage(at: nil)
                    Issue.record("loaded from nowhere")
                } catch FeedError.allSourcesFailed(let reasons) {
                    #expect(reasons.count == 2)
                    #expect(reasons.first?.contains("HTTP 503") == true)
                    #expect(reasons.last?.contains("feed.json not found") == true)
                }
            }
        }
    }

    @Test("a remote that fails past the first page falls back to the cached later page")
    func laterPagesFromCache() async throws {
        try await withFeedServer { server async throws in
            try await withTemporaryDirectory { directory async throws in
                let cache = DiskFeedPageCache(directory: directory.url)
                let online = RemoteFeedLoader(url: server.url("/cloudinary/videos"), format: .cloudinary, pageSize: 4)
                let all = try await online.cached(in: cache).loadAll()
                #expect(all.items.count == 7)

                let offline = RemoteFeedLoader(
                    url: server.url("/unavailable/cloudinary"), format: .cloudinary, pageSize: 4, retry: .never)
                let replay = try await offline.cached(in: DiskFeedPageCache(directory: directory.url)).loadAll()
                #expect(replay.items == all.items)
                #expect(replay.warnings.count == 2)
            }
        }
    }

    @Test("an empty first page from the primary falls back")
    func emptyPrimary() async throws {
        let primary = ScriptedFeedLoader([nil: .page(FeedPage(items: [], skipped: [
            SkippedEntry(index: 0, id: nil, reason: "missing \"url\""),
        ]))])
        let fallback = ScriptedFeedLoader(pages: [[item("fallback/a")]])
        let page = try await FallbackFeedLoader(primary: primary, fallback: fallback).loadPage(at: nil)
        #expect(page.items.map(\.publicID) == ["fallback/a"])
        #expect(page.warnings == [
            "the primary feed has no items (1 invalid entries skipped); using the fallback feed instead",
        ])
    }

    @Test("an empty primary page is kept, with a warning, when the fallback fails too")
    func emptyPrimaryFailingFallback() async throws {
        let primary = ScriptedFeedLoader([nil: .page(FeedPage(items: []))])
        let fallback = ScriptedFeedLoader([nil: .failure(.bundledFeedNotFound(searched: ["here"]))])
        let page = try await FallbackFeedLoader(primary: primary, fallback: fallback).loadPage(at: nil)
        #expect(page.items.isEmpty)
        #expect(page.warnings.first?.hasPrefix("the primary feed has no items, and the fallback failed") == true)
    }

    @Test("a later page the fallback does not have rethrows the primary's error, so the feed is not ended")
    func laterPageWithoutFallback() async throws {
        let primary = ScriptedFeedLoader([
            nil: .page(FeedPage(items: [item("a")], nextCursor: .page(2))),
            .page(2): .failure(.timedOut(url: "https://feeds.example.com/list")),
        ])
        let chain = FallbackFeedLoader(primary: primary, fallback: BundledFeedLoader(explicitPath: "/nonexistent"))
        let feed = Feed(loader: chain, prefetchDistance: 0)
        #expect(try await feed.item(at: 0)?.publicID == "a")
        await #expect(throws: FeedError.timedOut(url: "https://feeds.example.com/list")) { try await feed.item(at: 1) }
        #expect(await feed.isComplete == false)
    }

    @Test("the cache keeps at most maxPages pages, dropping the least recently stored")
    func cacheLimit() async throws {
        try await withTemporaryDirectory { directory async throws in
            let cache = DiskFeedPageCache(directory: directory.url, maxPages: 2)
            let now = Date()
            for (number, age) in [(1, 300.0), (2, 200.0), (3, 0.0)] {
                try await cache.store(FeedPage(items: [item("p\(number)")]), for: .page(number))
                try FileManager.default.setAttributes(
                    [.modificationDate: now.addingTimeInterval(-age)],
                    ofItemAtPath: cache.fileURL(for: .page(number)).path)
            }
            try await cache.store(FeedPage(items: [item("p3")]), for: .page(3))
            #expect(try await cache.cachedPage(for: .page(1)) == nil)
            #expect(try await cache.cachedPage(for: .page(2)) != nil)
            #expect(try await cache.cachedPage(for: .page(3)) != nil)
        }
    }

    @Test("cache files are written atomically: no temporary files remain, a corrupt file is a miss")
    func diskCache() async throws {
        try await withTemporaryDirectory { directory async throws in
            let cache = DiskFeedPageCache(directory: directory.url.appendingPathComponent("c"))
            let page = FeedPage(items: [item("a"), item("b/c")], nextCursor: .token("t+/=="), warnings: ["w"])
            try await cache.store(page, for: nil)
            try await cache.store(FeedPage(items: [item("z")]), for: .token("t+/=="))
            let files = try FileManager.default.contentsOfDirectory(atPath: cache.directory.path).sorted()
            #expect(files.count == 2 && files.allSatisfy { $0.hasPrefix("page-") && $0.hasSuffix(".json") })

            let restarted = DiskFeedPageCache(directory: cache.directory)
            let first = try #require(try await restarted.cachedPage(for: nil))
            #expect(first.page.items == page.items && first.page.nextCursor == .token("t+/=="))
            #expect(first.page.warnings.isEmpty)
            #expect(try await restarted.cachedPage(for: .token("t+/=="))?.page.items.map(\.publicID) == ["z"])
            #expect(try await restarted.cachedPage(for: .page(2)) == nil)

            try Data("{not json".utf8).write(to: cache.fileURL(for: nil))
            #expect(try await restarted.cachedPage(for: nil) == nil)
        }
    }
}
