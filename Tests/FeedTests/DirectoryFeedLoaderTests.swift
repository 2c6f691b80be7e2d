import Foundation
import Testing
@testable import Feed

@Suite("Directory loader")
struct DirectoryFeedLoaderTests {
    /// A folder with media files of known modification times, and files that must not be listed.
    func makeFolder(_ directory: TemporaryDirectory) throws {
        try directory.write("b/clip2.mp4", "two", modified: iso("2026-11-02T10:00:00Z"))
        try directory.write("b/clip10.MOV", "ten", modified: iso("2026-11-03T10:00:00Z"))
        try directory.write("a.jpg", "jpeg", modified: iso("2026-11-05T10:00:00Z"))
        try directory.write("music/song.mp3", "mp3", modified: iso("2026-11-01T10:00:00Z"))
        try directory.write("dup.mp4", "first", modified: iso("2026-10-01T10:00:00Z"))
        try directory.write("dup.webm", "second", modified: iso("2026-10-01T10:00:00Z"))
        try directory.write("notes.txt", "not media", modified: iso("2026-11-09T10:00:00Z"))
        try directory.write(".hidden.mp4", "hidden", modified: iso("2026-11-09T10:00:00Z"))
        try directory.write(".cache/inside.mp4", "hidden", modified: iso("2026-11-09T10:00:00Z"))
    }

    @Test("recursive scan: public_id is the relative path without extension, newest first, extras ignored")
    func newestFirst() async throws {
        try await withTemporaryDirectory { directory async throws in
            try makeFolder(directory)
            let page = try await DirectoryFeedLoader(root: directory.url).loadPage(at: nil)
            #expect(page.items.map(\.publicID) == ["a", "b/clip10", "b/clip2", "music/song", "dup"])
            #expect(page.nextCursor == nil)
            let clip = try #require(page.items.first { $0.publicID == "b/clip10" })
            #expect(clip.format == "mov" && clip.bytes == 3)
            #expect(clip.createdAt == iso("2026-11-03T10:00:00Z"))
            #expect(clip.source == directory.url.appendingPathComponent("b/clip10.MOV").standardizedFileURL)
            #expect(page.skipped == [SkippedEntry(index: nil, id: "dup.webm", reason: "same public_id as dup.mp4")])
        }
    }

    @Test("a batch's output folder inside the feed folder is not listed, however deep (issue 15: thumbs DIR --out DIR/thumbs)")
    func skipsOutputFolders() async throws {
        try await withTemporaryDirectory { directory async throws in
            try makeFolder(directory)
            try directory.write("thumbs/.videofeed.lock", "", modified: iso("2026-11-09T10:00:00Z"))
            try directory.write("thumbs/a.jpg", "thumb", modified: iso("2026-11-09T10:00:00Z"))
            try directory.write("b/out/deep/.videofeed.lock", "", modified: iso("2026-11-09T10:00:00Z"))
            try directory.write("b/out/deep/clip.720x1280.mp4", "rendition", modified: iso("2026-11-09T10:00:00Z"))
            try directory.write("b/out/keep.mp4", "a real item", modified: iso("2026-11-09T11:00:00Z"))
            let page = try await DirectoryFeedLoader(root: directory.url).loadPage(at: nil)
            #expect(page.items.map(\.publicID) == ["b/out/keep", "a", "b/clip10", "b/clip2", "music/song", "dup"])
        }
    }

    @Test("by name, numbers by value")
    func byName() async throws {
        try await withTemporaryDirectory { directory async throws in
            try makeFolder(directory)
            let loader = DirectoryFeedLoader(root: directory.url, order: .name)
            let page = try await loader.loadPage(at: nil)
            #expect(page.items.map(\.publicID) == ["a", "b/clip2", "b/clip10", "dup", "music/song"])
            #expect(try await loader.loadPage(at: .page(2)) == .end)
        }
    }

    @Test("refresh reports exactly what was added, changed (size, mtime) and removed")
    func refreshDiff() async throws {
        try await withTemporaryDirectory { directory async throws in
            try makeFolder(directory)
            let loader = DirectoryFeedLoader(root: directory.url)
            _ = try await loader.loadPage(at: nil)
            #expect(try await loader.refresh().isEmpty)

            try directory.write("new/one.mkv", "new", modified: iso("2026-11-10T10:00:00Z"))
            try directory.write("a.jpg", "bigger jpeg", modified: iso("2026-11-11T10:00:00Z"))
            try FileManager.default.setAttributes(
                [.modificationDate: iso("2026-11-12T10:00:00Z")],
                ofItemAtPath: directory.url.appendingPathComponent("b/clip2.mp4").path)
            try FileManager.default.removeItem(at: directory.url.appendingPathComponent("music/song.mp3"))

            let diff = try await loader.refresh()
            #expect(diff.added.map(\.publicID) == ["new/one"])
            #expect(diff.changed.map(\.publicID) == ["a", "b/clip2"])
            #expect(diff.removed.map(\.publicID) == ["music/song"])
            #expect(diff.changed.first?.bytes == 11)
            #expect(diff.changed.last?.createdAt == iso("2026-11-12T10:00:00Z"))
            #expect(diff.removed.first?.createdAt == iso("2026-11-01T10:00:00Z"))
            #expect(try await loader.refresh().isEmpty)
        }
    }

    @Test("the first refresh reports everything as added")
    func firstRefresh() async throws {
        try await withTemporaryDirectory { directory async throws in
            try directory.write("x.mp4", "x")
            let diff = try await DirectoryFeedLoader(root: directory.url).refresh()
            #expect(diff.added.map(\.publicID) == ["x"] && diff.changed.isEmpty && diff.removed.isEmpty)
        }
    }

    @Test("a missing folder is a typed error")
    func missingFolder() async throws {
        let loader = DirectoryFeedLoader(root: URL(fileURLWithPath: "/nonexistent/feed/folder"))
        await #expect(throws: FeedError.unreadable(path: "/nonexistent/feed/folder", reason: "not a directory")) {
            try await loader.loadPage(at: nil)
        }
    }
}
