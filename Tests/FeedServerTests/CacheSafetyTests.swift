import EngineSupport
@testable import FeedServer
import Foundation
import TestSupport
import Testing

/// The cache against a bad day: links planted in its folder, makers killed mid-run, a full disk.
struct CacheSafetyTests {
    /// GIVEN a folder outside the cache and links to it planted in the cache (a folder link and a file link)
    /// THEN nothing is read, written or evicted through them.
    @Test func aLinkPlantedInTheCacheIsNeitherFollowedForReadingNorForWriting() throws {
        let root = try TestFixtures.temporaryFolder("cache-links")
        let outside = try TestFixtures.temporaryFolder("cache-outside")
        let secret = outside.appendingPathComponent("secret.txt")
        try Data("secret".utf8).write(to: secret)
        let cache = try MediaCache(root: root, limit: 10_000)
        // A folder of the cache that is a link, and a cached file that is a link.
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("item.x").path,
                                                   withDestinationPath: outside.path)
        try Self.makeFolder(root.appendingPathComponent("item.y"))
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("item.y/poster.jpg").path,
                                                   withDestinationPath: secret.path)
        for key in ["item.x/secret.txt", "item.y/poster.jpg"] {
            #expect(cache.read(key) == nil)
            #expect(!cache.contains(key))
            #expect(cache.openForReading(key) == nil)
        }
        for key in ["item.x/poster.jpg", "item.x/new/seg-0.m4s", "item.y/poster.jpg"] {
            let error = #expect(throws: CacheError.self) { try cache.write(key, [1, 2, 3]) }
            #expect(error?.reason == "a symbolic link in the cache path")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["secret.txt"])
        #expect(try String(contentsOf: secret, encoding: .utf8) == "secret")
        // A work folder's files are not adopted through a link either.
        let work = try cache.workFolder()
        try Data([7]).write(to: work.url.appendingPathComponent("poster.jpg"))
        #expect(throws: CacheError.self) { try cache.adopt(work, into: "item.x") }
        work.finish()
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["secret.txt"])
        // Eviction scans without crossing the link: the outside file is neither counted nor removed.
        try cache.write("a/big.bin", [UInt8](repeating: 1, count: 5_000))
        var old = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, root.appendingPathComponent("a/big.bin").path, &old, 0)
        try cache.write("a/bigger.bin", [UInt8](repeating: 2, count: 5_500))
        #expect(FileManager.default.fileExists(atPath: secret.path))
        #expect(!cache.contains("a/big.bin") && cache.bytes == 5_500)
    }

    /// A file opened for reading is the cached file, touched for LRU; only regular files are opened.
    @Test func openForReadingGivesTheFileAndCountsAsAUse() throws {
        let root = try TestFixtures.temporaryFolder("cache-open")
        let cache = try MediaCache(root: root, limit: 10_000)
        try cache.write("a/one.bin", [1, 2, 3])
        let path = root.appendingPathComponent("a/one.bin").path
        var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, path, &times, 0)
        let fd = try #require(cache.openForReading("a/one.bin"))
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8)
        #expect(read(fd, &bytes, 8) == 3 && Array(bytes.prefix(3)) == [1, 2, 3])
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mtim.tv_sec > 1_000_000)
        try Self.makeFolder(root.appendingPathComponent("a/dir"))
        #expect(mkfifo(root.appendingPathComponent("a/fifo").path, 0o644) == 0)
        #expect(cache.openForReading("a/dir") == nil && cache.openForReading("a/fifo") == nil)
        #expect(cache.openForReading("a/missing") == nil && cache.openForReading("../a/one.bin") == nil)
    }

    /// GIVEN work folders in `.work/`: one whose maker is gone (its lock file is not locked), one held by a live
    /// maker, one without a lock file that is young, and a young temporary file of a write in progress
    /// WHEN another cache opens the folder
    /// THEN the dead work is removed at once, live work is kept and counted, and the temporary file is not counted
    /// (its writer counts the file it becomes).
    @Test func workWhoseMakerIsGoneIsRemovedAtOnceAndLiveWorkCounts() throws {
        let root = try TestFixtures.temporaryFolder("cache-work")
        let first = try MediaCache(root: root, limit: 1_000_000)
        try first.write("a/one.bin", [UInt8](repeating: 1, count: 1_000))
        var old = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, root.appendingPathComponent("a/one.bin").path, &old, 0)
        let live = try first.workFolder()
        try Data(count: 5_000).write(to: live.url.appendingPathComponent("720x1280.mp4"))
        let work = root.appendingPathComponent(".work")
        // A maker killed mid-run: its folder and lock file, the lock released by the kernel.
        let dead = work.appendingPathComponent("99999-1-1")
        try Self.makeFolder(dead.appendingPathComponent("720x1280"))
        try Data(count: 3_000).write(to: dead.appendingPathComponent("720x1280/seg-0.m4s"))
        try Data().write(to: work.appendingPathComponent("99999-1-1.lock"))
        // A folder from a build without lock files: the age rule keeps it while it is young.
        let young = work.appendingPathComponent("99999-2-2")
        try Self.makeFolder(young)
        try Data(count: 700).write(to: young.appendingPathComponent("x.mp4"))
        try Data(count: 400).write(to: root.appendingPathComponent("a/.two.bin.tmp-1-2"))

        let second = try MediaCache(root: root, limit: 1_000_000)
        #expect(!FileManager.default.fileExists(atPath: dead.path))
        #expect(!FileManager.default.fileExists(atPath: work.appendingPathComponent("99999-1-1.lock").path))
        #expect(FileManager.default.fileExists(atPath: live.url.appendingPathComponent("720x1280.mp4").path))
        #expect(FileManager.default.fileExists(atPath: young.path))
        #expect(second.bytes == 1_000 + 5_000 + 700)

        // Over the limit, eviction counts the work too: cached files go until all of it fits.
        let small = try MediaCache(root: root, limit: 7_000)
        #expect(small.bytes == 6_700)
        try small.write("b/two.bin", [UInt8](repeating: 2, count: 600))
        #expect(!small.contains("a/one.bin") && small.contains("b/two.bin"))
        #expect(small.bytes == 5_000 + 700 + 600)

        // Finishing removes the folder and its lock.
        live.finish()
        let left = try FileManager.default.contentsOfDirectory(atPath: work.path)
        #expect(left == ["99999-2-2"])
    }

    /// Adopting a work folder moves its files in (skipping those cached already) and counts them once.
    @Test func adoptingWorkMovesItsFilesAndCountsThemOnce() throws {
        let root = try TestFixtures.temporaryFolder("cache-adopt")
        let cache = try MediaCache(root: root, limit: 1_000_000)
        try cache.write("item.12345678/720x1280/init.mp4", [UInt8](repeating: 9, count: 100))
        let work = try cache.workFolder()
        try Self.makeFolder(work.url.appendingPathComponent("720x1280"))
        try Data(count: 100).write(to: work.url.appendingPathComponent("720x1280/init.mp4"))
        try Data(count: 2_000).write(to: work.url.appendingPathComponent("720x1280/seg-0.m4s"))
        try Data(count: 3_000).write(to: work.url.appendingPathComponent("720x1280.mp4"))
        try cache.adopt(work, into: "item.12345678")
        work.finish()
        #expect(cache.read("item.12345678/720x1280/init.mp4") == [UInt8](repeating: 9, count: 100))
        #expect(cache.contains("item.12345678/720x1280/seg-0.m4s") && cache.contains("item.12345678/720x1280.mp4"))
        #expect(cache.bytes == 5_100)
        #expect(try MediaCache(root: root, limit: 1_000_000).bytes == 5_100)
    }

    /// GIVEN a disk that is full for the next write
    /// THEN the cache evicts its least recently used files and the write succeeds on its retry; a disk still full
    /// after that is a CacheError with a short reason and no path.
    @Test func aFullDiskEvictsAndTriesOnceMore() throws {
        let root = try TestFixtures.temporaryFolder("cache-full")
        let cache = try MediaCache(root: root, limit: 1_000_000)
        try cache.write("a/old.bin", [UInt8](repeating: 1, count: 4_000))
        try cache.write("a/new.bin", [UInt8](repeating: 2, count: 1_000))
        var old = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        utimensat(AT_FDCWD, root.appendingPathComponent("a/old.bin").path, &old, 0)

        cache.injectedWriteErrors.set([ENOSPC])
        try cache.write("b/seg.bin", [UInt8](repeating: 3, count: 500))
        // 5,000 held: room for 500 down to 90 % less 500 = 4,000, so the oldest file went.
        #expect(!cache.contains("a/old.bin") && cache.contains("a/new.bin"))
        #expect(cache.read("b/seg.bin") == [UInt8](repeating: 3, count: 500))
        #expect(cache.bytes == 1_500)

        cache.injectedWriteErrors.set([EDQUOT, ENOSPC])
        let error = #expect(throws: CacheError.self) { try cache.write("b/other.bin", [4]) }
        #expect(error?.reason == "no space left in the cache")
        #expect(!cache.contains("b/other.bin"))
        let names = try FileManager.default.subpathsOfDirectory(atPath: root.path)
        #expect(!names.contains { $0.contains(".tmp-") })

        // Adoption (a rename that may need a directory block) heals the same way.
        let work = try cache.workFolder()
        try Data(count: 10).write(to: work.url.appendingPathComponent("poster.jpg"))
        cache.injectedWriteErrors.set([ENOSPC])
        try cache.adopt(work, into: "c")
        #expect(cache.contains("c/poster.jpg"))
    }
}

extension CacheSafetyTests {
    /// A work folder locked by another process is kept while that process lives and removed by the next scan once
    /// it is killed (SIGKILL: the kernel lets its lock go).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/flock")))
    func workOfAKilledProcessIsRemovedByTheNextScan() throws {
        let root = try TestFixtures.temporaryFolder("cache-killed")
        let work = root.appendingPathComponent(".work")
        let folder = work.appendingPathComponent("4242-1-1")
        try Self.makeFolder(folder)
        try Data(count: 2_000).write(to: folder.appendingPathComponent("720x1280.mp4"))
        let lock = work.appendingPathComponent("4242-1-1.lock").path
        // The maker: one process (a shell that becomes `sleep`) holding the lock on its descriptor 9 until killed.
        var pid: pid_t = 0
        let argv = ["/bin/sh", "-c", "exec 9>>\"$0\" && flock -x 9 && exec sleep 300", lock]
        var cArgs = argv.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        try #require(posix_spawn(&pid, "/bin/sh", nil, nil, &cArgs, environ) == 0)
        var reaped = false
        defer { if !reaped { kill(pid, SIGKILL); waitpid(pid, nil, 0) } }
        // Wait (on a condition, not a clock) until it holds the lock.
        let probe = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        defer { close(probe) }
        var held = false
        for _ in 0..<10_000 where !held {
            held = flock(probe, LOCK_EX | LOCK_NB) != 0
            if !held { flock(probe, LOCK_UN); usleep(1_000) }
        }
        try #require(held)

        #expect(try MediaCache(root: root, limit: 1_000_000).bytes == 2_000)
        #expect(FileManager.default.fileExists(atPath: folder.path))
        kill(pid, SIGKILL)
        // Reaped (a waitpid interrupted, or answered by another reaper in this test process, is tried again), and
        // then gone for the kernel too: its lock is free (a condition, not a clock).
        while waitpid(pid, nil, 0) < 0 && errno == EINTR {}
        reaped = true
        var released = false
        for _ in 0..<10_000 where !released {
            released = flock(probe, LOCK_EX | LOCK_NB) == 0
            if released { flock(probe, LOCK_UN) } else { usleep(1_000) }
        }
        try #require(released)
        #expect(try MediaCache(root: root, limit: 1_000_000).bytes == 0)
        #expect(!FileManager.default.fileExists(atPath: folder.path) && !FileManager.default.fileExists(atPath: lock))
    }
}

extension CacheSafetyTests {
    /// Makes `folder` and the folders above it.
    static func makeFolder(_ folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }
}
