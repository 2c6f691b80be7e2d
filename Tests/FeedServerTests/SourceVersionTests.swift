import EngineSupport
import Feed
@testable import FeedServer
import Foundation
import Media
import Prefetch
import TestSupport
import Testing

/// What the server caches stays true to its source: a source that changes while a job makes its files, or whose
/// symbolic link points elsewhere, never leaves files cached as its version.
@Suite(.serialized) struct SourceVersionTests {
    /// GIVEN a clip truncated after its job checked it (the job makes a shorter item) and restored, same bytes and
    /// same modification time, before the job ends
    /// THEN the job fails as gone and nothing is cached, and once restored the item's MP4 is made anew, whole.
    @Test func aSourceTruncatedWhileItIsMadeIsNotCachedAndIsMadeAnewOnceRestored() async throws {
        let root = try ServeFeeds.folder([TestFixtures.transcode("interlaced.ts")], label: "serve-truncated")
        let source = root.appendingPathComponent("00-interlaced.ts").path
        let original = try Array(Data(contentsOf: URL(fileURLWithPath: source)))
        let cache = try TestFixtures.temporaryFolder("serve-truncated-cache")
        let engine = try ServeEngine(feed: Feed(loader: ServeFeeds.loader(root)), configuration: .init(cache: cache))
        defer { engine.shutdown() }
        let entry = try #require(try await engine.catalog.entry(at: 0))
        let key = JobKey(folder: entry.folder, artifact: .full)
        let listed = try #require(FileIdentity(path: source))
        Self.hook(engine) { _, phase in
            switch phase {
            case .checked: truncate(source, off_t(original.count / 2))
            case .made: Self.restore(source, original, modified: listed.modified)
            }
        }
        #expect(throws: Never.self) { try Self.expectGone { try engine.make(key, token: CancellationToken()) } }
        #expect(FileIdentity(path: source)?.stamp == listed.stamp)
        #expect(Self.files(under: cache.appendingPathComponent(entry.folder)).isEmpty)
        #expect(Self.files(under: cache.appendingPathComponent(".work")).isEmpty)

        Self.hook(engine, nil)
        try engine.make(key, token: CancellationToken())
        let mp4s = Self.files(under: cache.appendingPathComponent(entry.folder))
            .filter { !$0.contains("/") && $0.hasSuffix(".mp4") }
        #expect(!mp4s.isEmpty)
        for name in mp4s {
            let made = try MediaFile(path: cache.appendingPathComponent(entry.folder + "/" + name).path)
            #expect((made.info.duration ?? 0) > 1.8, "\(name) is the whole 2 s clip")
        }
    }

    /// GIVEN a segment job whose source is truncated and restored with the same bytes and modification time while
    /// it runs (only the change time tells)
    /// THEN the job fails as gone and neither the segment nor its init is cached; and a source changed between its
    /// listing and its job is not made at all.
    @Test func aSourceChangedAndRestoredWithinAJobIsCaughtByItsChangeTime() async throws {
        let root = try ServeFeeds.folder([TestFixtures.media("h264_portrait.mp4")], label: "serve-restored")
        let source = root.appendingPathComponent("00-h264_portrait.mp4").path
        let original = try Array(Data(contentsOf: URL(fileURLWithPath: source)))
        let cache = try TestFixtures.temporaryFolder("serve-restored-cache")
        let engine = try ServeEngine(feed: Feed(loader: ServeFeeds.loader(root)), configuration: .init(cache: cache))
        defer { engine.shutdown() }
        let entry = try #require(try await engine.catalog.entry(at: 0))
        let key = JobKey(folder: entry.folder, artifact: .segment(rendition: 0, index: 1))
        let listed = try #require(FileIdentity(path: source))
        Self.hook(engine) { _, phase in
            guard phase == .made else { return }
            Self.waitForTheClockToPass(listed.changed)
            truncate(source, 1000)
            Self.restore(source, original, modified: listed.modified)
        }
        #expect(throws: Never.self) { try Self.expectGone { try engine.make(key, token: CancellationToken()) } }
        let after = try #require(FileIdentity(path: source))
        #expect(after.inode == listed.inode && after.size == listed.size && after.stamp == listed.stamp)
        #expect(Self.files(under: engine.cache.root.appendingPathComponent(entry.folder)).isEmpty)

        // Changed after it was listed, before its job: the job does not open it.
        Self.hook(engine) { _, phase in Issue.record("the job went on to \(phase)") }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: source))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0]))
        try handle.close()
        #expect(throws: Never.self) { try Self.expectGone { try engine.make(key, token: CancellationToken()) } }
        #expect(Self.files(under: engine.cache.root.appendingPathComponent(entry.folder)).isEmpty)
        Self.hook(engine, nil)
    }

    /// GIVEN a folder feed whose item is a symbolic link to a clip elsewhere
    /// WHEN the link's target is replaced by another clip, then removed
    /// THEN the old version's URLs answer 410 and the listing names a new version; then that one answers 410 too.
    @Test func aSymlinkedSourceIsVersionedByItsTarget() async throws {
        let store = try TestFixtures.temporaryFolder("serve-link-store")
        let target = store.appendingPathComponent("clip.mp4").path
        try FileManager.default.copyItem(atPath: TestFixtures.media("h264_portrait.mp4"), toPath: target)
        let root = try TestFixtures.temporaryFolder("serve-link-feed")
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("00-clip.mp4").path,
                                                   withDestinationPath: target)
        let server = try await ServerHarness.start(ServeFeeds.loader(root))
        defer { Task { await server.stop() } }
        let first = try await Self.segments(server)
        #expect(try await server.get(first[0]).status == 200)
        #expect(try await server.get(first[1]).status == 200)

        // Another clip in the target's place: the link did not change, its target did.
        try FileManager.default.removeItem(atPath: target)
        try FileManager.default.copyItem(atPath: TestFixtures.transcode("rotated_phone.mp4"), toPath: target)
        #expect(try await server.get(first[0]).status == 410)
        #expect(try await server.get(first[1]).status == 410)
        let second = try await Self.segments(server)
        #expect(second[0] != first[0])
        #expect(try await server.get(second[0]).status == 200)

        // The target removed: the link dangles, and the version it named is gone.
        try FileManager.default.removeItem(atPath: target)
        #expect(try await server.get(second[0]).status == 410)
        #expect(try await server.get("/healthz").text == "ok\n")
    }

    // MARK: - Helpers

    /// The first rendition's segment URLs of the feed's first card.
    static func segments(_ server: ServerHarness) async throws -> [String] {
        let page = try await server.json("/api/feed?limit=1")
        let card = try #require((page["resources"] as? [[String: Any]])?.first)
        return try #require((card["renditions"] as? [[String: Any]])?.first?["segments"] as? [String])
    }

    /// Sets (or clears) `engine`'s job hook.
    static func hook(_ engine: ServeEngine, _ body: (@Sendable (JobKey, ServeEngine.JobPhase) -> Void)?) {
        ServeEngine.jobHooks.withLock { $0[ObjectIdentifier(engine)] = body }
    }

    /// Runs `body`, which must throw ``ServeEngine/Failure/gone(_:)``.
    static func expectGone(_ body: () throws -> Void) throws {
        do {
            try body()
            Issue.record("the job stored its files")
        } catch let failure as ServeEngine.Failure {
            guard case .gone = failure else { Issue.record("\(failure)"); return }
        }
    }

    /// Writes `bytes` over the file at `path` in place (same inode) and sets its modification time back.
    static func restore(_ path: String, _ bytes: [UInt8], modified: timespec) {
        let fd = open(path, O_WRONLY | O_TRUNC)
        precondition(fd >= 0)
        bytes.withUnsafeBytes { precondition(write(fd, $0.baseAddress!, $0.count) == $0.count) }
        close(fd)
        var times = [modified, modified]
        utimensat(AT_FDCWD, path, &times, 0)
    }

    /// Returns once the clock that stamps change times has moved past `time` (a condition, not a fixed wait).
    static func waitForTheClockToPass(_ time: timespec) {
        var now = timespec()
        repeat {
            clock_gettime(CLOCK_REALTIME_COARSE, &now)
        } while now.tv_sec < time.tv_sec || (now.tv_sec == time.tv_sec && now.tv_nsec <= time.tv_nsec)
    }

    /// The regular files under `folder`, relative to it.
    static func files(under folder: URL) -> [String] {
        guard let all = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        return all.compactMap { $0 as? String }.filter { name in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: folder.path + "/" + name, isDirectory: &isDirectory)
                && !isDirectory.boolValue
        }
    }
}
