import Dispatch
import Feed
import Foundation
import Media
import Transcoding

/// The feed as the server lists it: items paged in from the source on demand (``Feed``), each with the folder its
/// renditions live in (``RenditionFolder``), found again by that folder when a media URL names it.
///
/// An item's folder changes when its source changes (a new upload, a file replaced): the old folder is then
/// *retired*, and its URLs answer 410 Gone, while the next listing gives the new ones.
actor ServedCatalog {
    /// One listed item.
    struct Entry: Sendable {
        /// Its place in the feed.
        var index: Int
        var item: FeedItem
        /// Where its renditions live in the cache: `<public_id path>.<version>`.
        var folder: String
        /// What Media opens: a local path or the URL.
        var path: String
        var stamp: SourceStamp
    }

    /// What a folder named in a URL is.
    enum Lookup: Sendable {
        case current(Entry)
        /// An earlier version of an item, or an item whose source disappeared.
        case retired
        case unknown
    }

    let feed: Feed
    let settings: TranscodeSettings
    private var entries: [Int: Entry] = [:]
    private var byFolder: [String: Int] = [:]
    /// Retired folders (410 Gone), at most `retiredLimit`: the oldest are forgotten first (then 404, as never listed),
    /// so a server whose sources keep changing does not grow by one name per version for ever.
    private var retired: Set<String> = []
    private var retiredOrder: [String] = []
    private var retiredHead = 0
    let retiredLimit: Int
    /// The first index of each public ID's path among the first `indexedCount` items (``resolve(folder:limit:)``).
    private var pathIndex: [String: Int] = [:]
    private var indexedCount = 0
    /// Items read into the path index so far.
    var itemsIndexed: Int { indexedCount }
    /// Called with each new or changed entry (the engine learns where a folder's source is).
    private let onEntry: @Sendable (Entry) -> Void
    /// Called with each folder retired (the engine forgets what it kept for it).
    private let onRetire: @Sendable (String) -> Void

    init(feed: Feed, settings: TranscodeSettings, onEntry: @escaping @Sendable (Entry) -> Void,
         onRetire: @escaping @Sendable (String) -> Void = { _ in }, retiredLimit: Int = 100_000) {
        self.retiredLimit = max(1, retiredLimit)
        self.feed = feed
        self.settings = settings
        self.onEntry = onEntry
        self.onRetire = onRetire
    }

    /// The number of items when the listing's end is known.
    var total: Int? {
        get async { await feed.isComplete ? await feed.count : nil }
    }

    /// Items loaded so far.
    var loadedCount: Int {
        get async { await feed.count }
    }

    /// The entry at `index`, loading pages as needed; nil past the end. A local source is checked again (its size
    /// and time), so a replaced file gets a new folder.
    /// - Throws: the listing's error when a page cannot be loaded.
    func entry(at index: Int) async throws -> Entry? {
        guard index >= 0, let item = try await feed.item(at: index) else { return nil }
        if let known = entries[index], known.item.publicID == item.publicID, !item.source.isFileURL {
            return known
        }
        var stamp = SourceStamp(item: item)
        if stamp.needsRemoteCheck, !item.source.isFileURL {
            if let known = entries[index], known.item.publicID == item.publicID { return known }
            let url = item.source
            stamp.etag = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: RemoteStamp.fetch(url, timeout: 10)) }
            }
        }
        if let known = entries[index], known.item.publicID == item.publicID, known.stamp == stamp { return known }
        let folder = RenditionFolder.name(for: item.publicID, stamp: stamp, settings: settings)
        let entry = Entry(index: index, item: item, folder: folder,
                          path: item.source.isFileURL ? item.source.path : item.source.absoluteString, stamp: stamp)
        if let old = entries[index], old.folder != folder {
            byFolder[old.folder] = nil
            retire(old.folder)
        }
        entries[index] = entry
        byFolder[folder] = index
        retired.remove(folder)
        onEntry(entry)
        return entry
    }

    /// The item a URL's folder names. A local source that is gone or changed since it was listed retires the
    /// folder.
    func lookup(folder: String) -> Lookup {
        guard let index = byFolder[folder], let entry = entries[index] else {
            return retired.contains(folder) ? .retired : .unknown
        }
        if entry.item.source.isFileURL, SourceStamp(item: entry.item) != entry.stamp {
            byFolder[folder] = nil
            entries[index] = nil
            retire(folder)
            return .retired
        }
        return .current(entry)
    }

    /// Marks `folder` as an earlier version (its URLs answer 410) and tells the engine.
    private func retire(_ folder: String) {
        if retired.insert(folder).inserted {
            retiredOrder.append(folder)
            if retiredOrder.count - retiredHead > retiredLimit {
                retired.remove(retiredOrder[retiredHead])
                retiredHead += 1
                if retiredHead >= retiredLimit {
                    retiredOrder.removeFirst(retiredHead)
                    retiredHead = 0
                }
            }
        }
        onRetire(folder)
    }

    /// Whether `folder` is listed now or was once: the one lookup that request paths are matched against.
    func knows(folder: String) -> Bool { byFolder[folder] != nil || retired.contains(folder) }

    /// Whether `folder` names an item of the feed, finding it when this process has not listed it yet (a replica
    /// behind a load balancer answers URLs another replica listed): the item whose public ID maps to the folder's
    /// path is looked up in an index of the items read so far, which is extended (reading pages as needed, up to
    /// `limit` items) only past the last item indexed. Each item is indexed once, so an unknown folder costs a hash
    /// lookup once the feed is read, however many are asked for.
    func resolve(folder: String, limit: Int = 100_000) async -> Bool {
        if knows(folder: folder) { return true }
        guard MediaPath.isItemFolder(folder) else { return false }
        let path = String(folder.dropLast(9))
        while true {
            if let index = pathIndex[path] {
                _ = try? await entry(at: index)
                return knows(folder: folder)
            }
            let index = indexedCount
            guard index < limit, let item = try? await feed.item(at: index) else { return false }
            // Another lookup may have indexed this item while this one waited for it (the actor is reentrant): look
            // again from the top.
            guard indexedCount == index else { continue }
            indexedCount += 1
            let itemPath = OutputPath.relative(for: item.publicID)
            if pathIndex[itemPath] == nil { pathIndex[itemPath] = index }
        }
    }
}
