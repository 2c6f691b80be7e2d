import EngineSupport
import Foundation
import Testing
@testable import Feed

/// Issue 38: a watched folder's listing follows it — arrivals, removals, replacements — and a file still being
/// written waits until it is complete.
@Suite("Source watch")
struct SourceWatchTests {
    /// Waits on `watch` and reloads `feed` until `done` holds for its public IDs, or `seconds` pass.
    func follow(_ feed: Feed, _ watch: SourceWatch, seconds: Double = 20,
                until done: ([FeedItem]) -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if done(await feed.items) { return true }
            let waiter = Task { await watch.next() }
            let timer = Task {
                try? await Task.sleep(for: .seconds(2))
                waiter.cancel()
            }
            _ = await waiter.value
            timer.cancel()
            try await feed.reload()
        }
        return done(await feed.items)
    }

    func watched(_ directory: TemporaryDirectory, refresh: Double = 30) async throws -> (Feed, SourceWatch) {
        let loader = DirectoryFeedLoader(root: directory.url, order: .name, settling: FileSettling())
        let feed = Feed(loader: loader)
        try await feed.load(atLeast: 1)
        return (feed, SourceWatch.folder(loader, refresh: refresh))
    }

    @Test("a file copied in is listed, a removed one leaves, a replaced one changes version")
    func arrivalRemovalReplacement() async throws {
        try await withTemporaryDirectory { directory async throws in
            try directory.write("a.mp4", "old", modified: Date(timeIntervalSinceNow: -60))
            let (feed, watch) = try await watched(directory)
            defer { watch.stop() }
            #expect(watch.isLive)
            #expect(await feed.items.map(\.publicID) == ["a"])
            try Data("new clip".utf8).write(to: directory.url.appendingPathComponent("sub/b.mp4").creatingFolder())
            #expect(try await follow(feed, watch) { $0.map(\.publicID) == ["a", "sub/b"] })
            let generation = await feed.generation
            try FileManager.default.removeItem(at: directory.url.appendingPathComponent("a.mp4"))
            #expect(try await follow(feed, watch) { $0.map(\.publicID) == ["sub/b"] })
            #expect(await feed.generation > generation)
            let before = try #require(await feed.items.first)
            try Data("replaced, longer".utf8).write(to: directory.url.appendingPathComponent("sub/b.mp4"))
            #expect(try await follow(feed, watch) { $0.first?.bytes == 16 })
            let after = try #require(await feed.items.first)
            #expect(after.publicID == before.publicID && FeedChange.isNewVersion(after, of: before))
        }
    }

    @Test("a file held open by its writer is not listed until it is closed")
    func heldOpen() async throws {
        try await withTemporaryDirectory { directory async throws in
            try directory.write("a.mp4", "old", modified: Date(timeIntervalSinceNow: -60))
            let (feed, watch) = try await watched(directory)
            defer { watch.stop() }
            let path = directory.url.appendingPathComponent("growing.mp4").path
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            #expect(fd >= 0)
            _ = write(fd, "first half", 10)
            // Several looks over 3 s (well past the quiet period): held back each time.
            let listedEarly = try await follow(feed, watch, seconds: 3) { $0.contains { $0.publicID == "growing" } }
            #expect(!listedEarly)
            _ = write(fd, " second half", 12)
            close(fd)
            #expect(try await follow(feed, watch) { $0.contains { $0.publicID == "growing" } })
            #expect(await feed.items.first { $0.publicID == "growing" }?.bytes == 22)
        }
    }

    @Test("without inotify (a network file system), rescans list a file once it has stopped growing")
    func rescansOnly() async throws {
        try await withTemporaryDirectory { directory async throws in
            try directory.write("a.mp4", "old", modified: Date(timeIntervalSinceNow: -60))
            // Time is the test's: each rescan is 0.2 s after the last, whatever the machine's load.
            let now = Locked(Date().timeIntervalSince1970)
            let loader = DirectoryFeedLoader(root: directory.url, order: .name,
                                             settling: FileSettling(quiet: 1, clock: { now.get() }))
            let feed = Feed(loader: loader)
            try await feed.load(atLeast: 1)
            let watch = SourceWatch.folder(loader, refresh: 0.2, inotify: false)
            defer { watch.stop() }
            #expect(!watch.isLive)
            // The periodic rescan is what wakes a consumer here.
            #expect(await watch.next())
            // A file that grows by ten bytes before each of ten rescans: never listed while it grows.
            let path = directory.url.appendingPathComponent("slow.mp4").path
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(fd >= 0)
            for _ in 0..<10 {
                _ = write(fd, "0123456789", 10)
                // The write's time on the test's clock (as a file server's clock would stamp it).
                try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: now.get())],
                                                      ofItemAtPath: path)
                now.withLock { $0 += 0.2 }
                try await feed.reload()
                #expect(!(await feed.items.contains { $0.publicID == "slow" }))
            }
            close(fd)
            // Unchanged for a quiet second (five rescans): listed whole.
            for _ in 0..<6 {
                now.withLock { $0 += 0.2 }
                try await feed.reload()
            }
            #expect(await feed.items.first { $0.publicID == "slow" }?.bytes == 100)
        }
    }

    @Test("without inotify events, the quiet rule lists a file once it stops changing (a rescan)")
    func quietRule() async throws {
        try await withTemporaryDirectory { directory async throws in
            let settling = FileSettling(quiet: 0.3)
            let path = directory.url.appendingPathComponent("x.mp4").path
            try Data("abc".utf8).write(to: URL(fileURLWithPath: path))
            let now = Date().timeIntervalSince1970
            #expect(!settling.isComplete(path, now: now))
            #expect(!settling.isComplete(path, now: now + 0.1))
            #expect(settling.isComplete(path, now: now + 0.5))
            settling.sawWriting(path)
            #expect(!settling.isComplete(path, now: now + 10))
            settling.sawClosed(path)
            #expect(settling.isComplete(path, now: now + 10))
        }
    }
}

extension URL {
    /// This file URL, its folder created.
    func creatingFolder() throws -> URL {
        try FileManager.default.createDirectory(at: deletingLastPathComponent(), withIntermediateDirectories: true)
        return self
    }
}
