import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``FeedPageCache`` in a folder: one JSON file per cursor, so a cache outlives the process.
///
/// Each page is written to a temporary file in the same folder, flushed to disk, and renamed over the previous file,
/// so a reader (in this or another process) sees the old page or the new one, never a torn file. A file that cannot
/// be decoded counts as missing. Use one folder per feed source.
///
/// The folder holds at most ``maxPages`` pages: after a store, the least recently stored pages beyond that are
/// removed, as are temporary files left more than ten minutes ago by a writer that died.
public struct DiskFeedPageCache: FeedPageCache {
    /// The folder holding the cache files; created on first store.
    public let directory: URL
    /// How many pages the folder keeps.
    public let maxPages: Int

    /// Creates a cache in `directory` that keeps at most `maxPages` pages.
    public init(directory: URL, maxPages: Int = 200) {
        self.directory = directory.absoluteURL.standardizedFileURL
        self.maxPages = max(1, maxPages)
    }

    /// The page last stored for `cursor`, or `nil` when there is none or its file is unreadable.
    public func cachedPage(for cursor: FeedCursor?) async throws -> CachedFeedPage? {
        let file = fileURL(for: cursor)
        let key = Self.key(for: cursor)
        return try await BlockingWork.run {
            guard let data = try? Data(contentsOf: file),
                  let record = try? JSONDecoder().decode(Record.self, from: data),
                  record.key == key,
                  let savedAt = FeedDate.parseISO8601(record.savedAt)
            else { return nil }
            return CachedFeedPage(page: record.page, savedAt: savedAt)
        }
    }

    /// Saves `page` (without its warnings) for `cursor`, atomically.
    public func store(_ page: FeedPage, for cursor: FeedCursor?) async throws {
        var page = page
        page.warnings = []
        let record = Record(key: Self.key(for: cursor), savedAt: FeedDate.string(from: Date()), page: page)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(record)
        let directory = directory
        let file = fileURL(for: cursor)
        let maxPages = maxPages
        try await BlockingWork.run {
            try Self.writeAtomically(data, to: file, in: directory)
            Self.prune(directory, keeping: maxPages)
        }
    }

    /// The conventional cache folder of the listing at `source`: `$XDG_CACHE_HOME/videofeed/feeds/<hash>` (or
    /// `~/.cache/videofeed/feeds/<hash>`), where the hash of the whole URL keeps feeds apart without putting the
    /// URL, which may hold secrets, in a path.
    public static func defaultDirectory(
        for source: URL, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        let base: URL
        if let cacheHome = environment["XDG_CACHE_HOME"], cacheHome.hasPrefix("/") {
            base = URL(fileURLWithPath: cacheHome, isDirectory: true)
        } else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            base = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".cache", isDirectory: true)
        }
        return base.appendingPathComponent("videofeed/feeds/" + fnv1a(source.absoluteString), isDirectory: true)
    }

    /// The file of `cursor`'s page: `page-<FNV-1a 64 of the cursor key>.json`.
    func fileURL(for cursor: FeedCursor?) -> URL {
        directory.appendingPathComponent("page-" + Self.fnv1a(Self.key(for: cursor)) + ".json")
    }

    /// The 64-bit FNV-1a hash of `text`'s UTF-8 bytes, as 16 hex digits: stable across runs and platforms.
    private static func fnv1a(_ text: String) -> String {
        let hash = text.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { hash, byte in
            (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    private static func key(for cursor: FeedCursor?) -> String {
        cursor?.description ?? "first"
    }

    private static func writeAtomically(_ data: Data, to file: URL, in directory: URL) throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let temporary = directory.appendingPathComponent(".\(file.lastPathComponent).\(UUID().uuidString).tmp")
            guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
                throw FeedError.unreadable(path: temporary.path, reason: "cannot create a temporary file")
            }
            do {
                let handle = try FileHandle(forWritingTo: temporary)
                defer { try? handle.close() }
                try handle.write(contentsOf: data)
                try handle.synchronize()
            } catch {
                try? FileManager.default.removeItem(at: temporary)
                throw error
            }
            guard rename(temporary.path, file.path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(at: temporary)
                throw FeedError.unreadable(path: file.path, reason: "cannot replace the cache file: \(reason)")
            }
        } catch let error as FeedError {
            throw error
        } catch {
            throw FeedError.unreadable(path: directory.path, reason: SystemErrorText.reason(error))
        }
    }

    /// Removes the oldest pages beyond `maxPages` and abandoned temporary files; failures are ignored (the cache
    /// stays correct, only larger).
    private static func prune(_ directory: URL, keeping maxPages: Int) {
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: directory.path) else { return }
        var pages: [(url: URL, modified: Date)] = []
        let abandoned = Date().addingTimeInterval(-600)
        for name in names {
            let url = directory.appendingPathComponent(name)
            let attributes = try? manager.attributesOfItem(atPath: url.path)
            let modified = attributes?[.modificationDate] as? Date ?? .distantPast
            if name.hasPrefix("page-") && name.hasSuffix(".json") {
                pages.append((url, modified))
            } else if name.hasPrefix(".page-") && name.hasSuffix(".tmp") && modified < abandoned {
                try? manager.removeItem(at: url)
            }
        }
        guard pages.count > maxPages else { return }
        for page in pages.sorted(by: { $0.modified > $1.modified }).dropFirst(maxPages) {
            try? manager.removeItem(at: page.url)
        }
    }

    /// The file format, version 1.
    private struct Record: Codable {
        var version = 1
        var key: String
        var savedAt: String
        var page: FeedPage
    }
}
