import Dispatch
import Feed
import Foundation
import Media
import Transcode

/// The feed as the server lists it: items paged in from the source on demand (``Feed``), each with the folder its
/// renditions live in (``RenditionFolder``), found again by that folder when a media URL names it.
///
/// An item's folder changes when its source changes (a new upload, a file replaced): the old folder is then
/// *retired*, and its URLs answer 410 Gone, while the next listing gives the new ones.
///
/// A watched source is read again as it changes (``refresh()``): items arrive, go (their folders are retired) and
/// change version; positions move, so a listing cursor names an item (``cursor(after:)``) and is found again by it,
/// or, for an item that went, by the item that followed it when it went (``start(after:)``).
actor ServedCatalog {
    /// One listed item.
    struct Entry: Sendable {
        /// Its place in the feed when it was read.
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
    /// Entries by public ID, and the public ID each current folder belongs to.
    private var entries: [String: Entry] = [:]
    private var byFolder: [String: String] = [:]
    /// Each item removed by a refresh → the item that followed it then (nil: it was last), at most `retiredLimit`:
    /// how a cursor that names a removed item finds its place.
    private var successors: [String: String?] = [:]
    private var successorOrder: [String] = []
    /// Positions by public ID of the feed's items, for the feed's (generation, count) it was built at.
    private var positions: [String: Int] = [:]
    private var positionsOf: (generation: Int, count: Int) = (-1, -1)
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

    /// How many times the listing changed since start-up.
    var generation: Int {
        get async { await feed.generation }
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
        return await entry(for: item, at: index)
    }

    /// The entry of `item` (listed at `index`), made or checked again.
    private func entry(for item: FeedItem, at index: Int) async -> Entry {
        let id = item.publicID
        if var known = entries[id], known.item == item, !item.source.isFileURL {
            known.index = index
            return known
        }
        var stamp = SourceStamp(item: item)
        if stamp.needsRemoteCheck, !item.source.isFileURL {
            if var known = entries[id], known.item == item {
                known.index = index
                return known
            }
            let url = item.source
            stamp.etag = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: RemoteStamp.fetch(url, timeout: 10)) }
            }
        }
        if var known = entries[id], known.item.source == item.source, known.stamp == stamp {
            known.index = index
            return known
        }
        let folder = RenditionFolder.name(for: id, stamp: stamp, settings: settings)
        let entry = Entry(index: index, item: item, folder: folder,
                          path: item.source.isFileURL ? item.source.path : item.source.absoluteString, stamp: stamp)
        if let old = entries[id], old.folder != folder {
            byFolder[old.folder] = nil
            retire(old.folder)
        }
        entries[id] = entry
        byFolder[folder] = id
        retired.remove(folder)
        onEntry(entry)
        return entry
    }

    /// Reads the source again (``Feed/reload()``): a removed item's folder is retired (its URLs answer 410) and it
    /// is remembered with the item that followed it, for cursors that name it; a changed item's old folder is
    /// retired when its new version is next read. The path index is read again from the start.
    /// - Throws: the listing's error (nothing changed then).
    func refresh() async throws -> FeedChange {
        let before = await feed.items
        let change = try await feed.reload()
        guard !change.isEmpty else { return change }
        let removed = Set(change.removed.map(\.publicID))
        if !removed.isEmpty {
            // The item that followed each removed one, skipping items removed with it.
            var following: String? = nil
            for item in before.reversed() {
                if removed.contains(item.publicID) {
                    rememberSuccessor(of: item.publicID, following)
                } else {
                    following = item.publicID
                }
            }
        }
        for id in removed.union(change.changed.map(\.publicID)) {
            guard let entry = entries.removeValue(forKey: id) else { continue }
            byFolder[entry.folder] = nil
            retire(entry.folder)
        }
        pathIndex = [:]
        indexedCount = 0
        return change
    }

    private func rememberSuccessor(of id: String, _ next: String?) {
        if successors.updateValue(next, forKey: id) == nil { successorOrder.append(id) }
        if successorOrder.count > retiredLimit {
            let drop = successorOrder.count - retiredLimit
            for old in successorOrder.prefix(drop) { successors[old] = nil }
            successorOrder.removeFirst(drop)
        }
    }

    /// The current position of the item with public ID `id` among the items loaded, or nil.
    func position(of id: String) async -> Int? {
        let generation = await feed.generation, items = await feed.items
        if positionsOf != (generation, items.count) {
            positions = Dictionary(items.enumerated().map { ($1.publicID, $0) }, uniquingKeysWith: { first, _ in first })
            positionsOf = (generation, items.count)
        }
        return positions[id]
    }

    /// Where a page after the item `id` starts now: just after it; for an item that was removed, at the item that
    /// followed it when it went (or after that one's own successor, if it went too); nil when none of them is
    /// listed (the caller falls back to the position the cursor remembered).
    func start(after id: String) async -> Int? {
        if let at = await position(of: id) { return at + 1 }
        var next = successors[id]
        var hops = 0
        while let candidate = next, hops < 10_000 {
            guard let following = candidate else { return await feed.count }
            if let at = await position(of: following) { return at }
            next = successors[following]
            hops += 1
        }
        return nil
    }

    /// Whether the item `id` was removed by a refresh (and is remembered so).
    func wasRemoved(_ id: String) -> Bool { successors[id] != nil && entries[id] == nil }

    /// The cursor of a page that ends with the item `id` at `index`: the position and the public ID, so that the next
    /// page is found by the item wherever it has moved.
    static func cursor(after id: String, at index: Int) -> String {
        "\(index)~" + Data(id.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A cursor's parts: the position it remembers and the item it names (none in a plain index, an older server's
    /// cursor); nil for text this server never gives.
    static func parse(cursor: String) -> (index: Int, id: String?)? {
        guard cursor.utf8.count <= 4096 else { return nil }
        let parts = cursor.split(separator: "~", maxSplits: 1, omittingEmptySubsequences: false)
        guard let index = Int(parts[0]), index >= 0, index <= ViewerMessage.maxIndex + 1 else { return nil }
        guard parts.count == 2 else { return (index, nil) }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let id = String(data: data, encoding: .utf8), !id.isEmpty
        else { return nil }
        return (index, id)
    }

    /// The item a URL's folder names. A local source that is gone or changed since it was listed retires the
    /// folder.
    func lookup(folder: String) -> Lookup {
        guard let id = byFolder[folder], let entry = entries[id] else {
            return retired.contains(folder) ? .retired : .unknown
        }
        if entry.item.source.isFileURL, SourceStamp(item: entry.item) != entry.stamp {
            byFolder[folder] = nil
            entries[id] = nil
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
