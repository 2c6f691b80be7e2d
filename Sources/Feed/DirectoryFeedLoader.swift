import Foundation

/// Lists the media files under a folder, recursively, as one page.
///
/// - A file is listed when its extension (any case) is in ``extensions`` — by default ``MediaFileTypes/all``.
///   Hidden files and folders (names starting with `.`) are ignored; symbolic links to folders are not followed.
/// - `public_id` is the path relative to ``root`` without the extension (`trips/2024/lisbon`); when two files differ
///   only by extension, the first in path order is listed and the other is reported in ``FeedPage/skipped``.
/// - `created_at` is the file's modification time, `bytes` its size, `format` its extension.
///
/// The loader remembers the listing it last produced, so ``refresh()`` can say what changed since.
public actor DirectoryFeedLoader: FeedLoader {
    /// How items are sorted.
    public enum Order: Sendable, Hashable {
        /// Newest modification time first; equal times by public ID.
        case newestFirst
        /// By public ID, numbers compared by value (`clip2` before `clip10`).
        case name
    }

    /// The file that marks a folder of the engine's own outputs (a batch's output folder, the server's cache): a
    /// folder holding it is never listed, wherever it lies in the scanned folder.
    public static let outputMarker = DirectoryScanner.outputMarker

    /// The scanned folder.
    public nonisolated let root: URL
    /// The sort order of the listing.
    public nonisolated let order: Order
    /// The listed extensions, lower case without a dot.
    public nonisolated let extensions: Set<String>

    /// When set, files still being written are left out of the listing (``FileSettling``), for a folder that is
    /// watched while files arrive.
    public nonisolated let settling: FileSettling?

    private var lastListing: [FeedItem]?

    /// Creates a loader for the folder at `root`; with `settling`, a file is listed once it is complete (a file
    /// listed before that is being replaced stays listed as it was until the new one is complete).
    public init(root: URL, order: Order = .newestFirst, extensions: Set<String> = MediaFileTypes.all,
                settling: FileSettling? = nil) {
        self.root = root.standardizedFileURL
        self.order = order
        self.extensions = Set(extensions.map { $0.lowercased() })
        self.settling = settling
    }

    /// The whole listing for `nil`; ``FeedPage/end`` for any other cursor.
    public func loadPage(at cursor: FeedCursor?) async throws -> FeedPage {
        guard cursor == nil else { return .end }
        var page = try await scan()
        if let settling, lastListing == nil {
            // The first listing knows nothing of writers yet: files modified just before it (copied in before the
            // server or the watch started) are given up to three quiet periods to settle, looked at four times a
            // period, so they are listed from the start; one still changing after that waits for the watch.
            let deadline = Date().addingTimeInterval(3 * settling.quiet)
            while settling.pending > 0, Date() < deadline {
                try await Task.sleep(nanoseconds: UInt64(settling.quiet / 4 * 1e9))
                page = try await scan()
            }
        }
        lastListing = page.items
        return page
    }

    /// Scans the folder again and returns what was added, changed (size or modification time) and removed since the
    /// listing this loader last produced (by ``loadPage(at:)`` or `refresh()`); the first time, everything is added.
    public func refresh() async throws -> FeedChange {
        let page = try await scan()
        let diff = FeedChange.between(lastListing ?? [], page.items)
        lastListing = page.items
        return diff
    }

    /// Scans the folder off the cooperative thread pool.
    private func scan() async throws -> FeedPage {
        let scanner = DirectoryScanner(root: root, extensions: extensions)
        let settling = settling, previous = lastListing ?? []
        var page = try await BlockingWork.run {
            var page = try scanner.scan()
            if let settling { page.items = Self.settled(page.items, previous: previous, settling: settling) }
            return page
        }
        switch order {
        case .newestFirst:
            page.items.sort { $0.createdAt != $1.createdAt ? $0.createdAt > $1.createdAt : $0.publicID < $1.publicID }
        case .name:
            page.items.sort { DirectoryScanner.namesAscending($0.publicID, $1.publicID) }
        }
        return page
    }

    /// `items` without those still being written; one listed before (by public ID) stays as it was listed.
    private static func settled(_ items: [FeedItem], previous: [FeedItem], settling: FileSettling) -> [FeedItem] {
        let before = Dictionary(previous.map { ($0.publicID, $0) }, uniquingKeysWith: { first, _ in first })
        var kept: [FeedItem] = []
        var heldBack = 0
        for item in items {
            if settling.isComplete(item.source.path) {
                kept.append(item)
            } else {
                heldBack += 1
                if let listed = before[item.publicID] { kept.append(listed) }
            }
        }
        settling.finishScan(present: Set(items.map(\.source.path)), heldBack: heldBack)
        return kept
    }
}
