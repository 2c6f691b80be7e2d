import EngineSupport
import Foundation
import Media
import Prefetch

/// Driving the engine's jobs one at a time, outside the pool: how `videofeed simulate calibrate --serve` measures
/// what each artifact costs to make.
extension ServeEngine {
    /// An item as the listing reads it.
    public struct ListedItem: Sendable, Equatable {
        /// Its place in the feed.
        public var index: Int
        /// The feed item's public ID.
        public var publicID: String
        /// Where its files live in the cache: `<public_id path>.<version>`, the ``JobKey/folder`` of its jobs.
        public var folder: String
        /// What Media opens: a local path or a URL.
        public var source: String
    }

    /// The feed's items as `serve` lists them, in order, at most `limit`; each is then known to the engine, so its
    /// jobs can be made (``makeAlone(_:)``).
    /// - Throws: the listing's error when a page cannot be loaded.
    public func listedItems(limit: Int = 100_000) async throws -> [ListedItem] {
        var listed: [ListedItem] = []
        while listed.count < limit, let entry = try await catalog.entry(at: listed.count) {
            listed.append(ListedItem(index: entry.index, publicID: entry.item.publicID, folder: entry.folder,
                                     source: entry.path))
        }
        return listed
    }

    /// Makes `key`'s artifact on the calling thread and stores it in the cache, as a pool worker runs the job (the
    /// pool's `perform`: ``make(_:token:)``, the source checked before and after), with no queue and no other job:
    /// for measuring one job alone. The calling thread keeps its own nice value (the pool's workers run at
    /// ``WorkPool/niceness``, which changes nothing on an idle machine).
    /// - Throws: the job's error, as the pool would report it.
    public func makeAlone(_ key: JobKey) throws {
        try make(key, token: CancellationToken())
    }

    /// The manifest of the item in `folder` when it is made (known in memory, as after ``makeAlone(_:)`` made it).
    public func madeManifest(folder: String) -> ItemManifest? { knownManifest(folder) }
}
