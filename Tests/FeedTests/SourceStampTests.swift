import Foundation
import Testing
@testable import Feed

/// A local source's version: of the file a link points to, and the same value earlier runs recorded.
struct SourceStampTests {
    /// GIVEN an item whose source is a symbolic link
    /// THEN its stamp is its target's: a new target is a new version, a removed one is none.
    @Test func aSymlinkedSourceIsVersionedByItsTarget() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let target = try directory.write("store/clip.mp4", "first version")
        let link = directory.url.appendingPathComponent("feed/clip.mp4")
        try FileManager.default.createDirectory(at: link.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let item = FeedItem(publicID: "clip", createdAt: Date(), source: link)
        let first = SourceStamp(item: item)
        #expect(first.size == 13)
        // The link itself does not change when its target is replaced.
        try FileManager.default.removeItem(at: target)
        try directory.write("store/clip.mp4", "the second, longer version")
        let second = SourceStamp(item: item)
        #expect(second.size == 26 && second != first)
        try FileManager.default.removeItem(at: target)
        let gone = SourceStamp(item: item)
        #expect(gone.size == nil && gone.mtime == nil)
    }

    /// A plain file's stamp is exactly what `FileManager` gave before (records of earlier runs keep matching), at any
    /// nanosecond.
    @Test(arguments: [0, 1, 499_999, 500_000, 123_456_789, 999_999_999])
    func aPlainFilesStampMatchesFileManager(nanoseconds: Int) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("clip.mp4", "bytes")
        var times = [timespec(tv_sec: 1_764_000_000, tv_nsec: nanoseconds),
                     timespec(tv_sec: 1_764_000_000, tv_nsec: nanoseconds)]
        #expect(utimensat(AT_FDCWD, file.path, &times, 0) == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        let stamp = SourceStamp(item: FeedItem(publicID: "clip", createdAt: Date(), source: file))
        #expect(stamp.mtime == (attributes[.modificationDate] as? Date)?.timeIntervalSince1970)
        #expect(stamp.size == 5)
    }

    /// The identity sees what size and time do not: the same bytes and time restored after a change.
    @Test func identityChangesWhenAFileIsRestoredWithItsTime() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("clip.mp4", "original")
        let before = try #require(FileIdentity(path: file.path))
        // Past the change time's clock tick (a condition, not a fixed wait).
        var now = timespec()
        repeat {
            clock_gettime(CLOCK_REALTIME_COARSE, &now)
        } while now.tv_sec == before.changed.tv_sec && now.tv_nsec == before.changed.tv_nsec
        try Data("original".utf8).write(to: file)
        var times = [before.modified, before.modified]
        #expect(utimensat(AT_FDCWD, file.path, &times, 0) == 0)
        let after = try #require(FileIdentity(path: file.path))
        #expect(after.stamp == before.stamp)
        #expect(after != before)
        #expect(FileIdentity(path: directory.url.appendingPathComponent("missing").path) == nil)
    }
}
