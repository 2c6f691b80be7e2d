/// A feed as a reader sees it: items accumulated page by page on demand, without duplicates, optionally endless.
///
/// - **On demand.** ``item(at:)`` returns at once when the item is loaded; it waits for pages only when the reader
///   is past the loaded items. Whenever the reader is within ``prefetchDistance`` items of the end, the next page is
///   requested in the background, so a steady reader never waits.
/// - **No duplicates.** An item whose ``FeedItem/publicID`` was already seen is dropped (the first one stays) and
///   counted in ``duplicateCount``.
/// - **A real end.** Paging stops at a page without a next cursor, at a cursor the listing already gave (a loop),
///   or after ``maxPagesWithoutNewItems`` pages in a row that bring nothing new.
/// - **Wrap-around.** With ``wrapsAround``, once the end is known, the item after the last is the first again, as in
///   an endless short-video feed: index `i` shows item `i % count`.
///
/// Only one page is loaded at a time; concurrent requests join the load in flight. A failed load changes nothing and
/// is tried again by the next request that needs it.
public actor Feed {
    /// Where pages come from.
    public nonisolated let loader: any FeedLoader
    /// How close (in items) to the end of the loaded items the reader may come before the next page is requested.
    public nonisolated let prefetchDistance: Int
    /// Whether the item after the last is the first.
    public nonisolated let wrapsAround: Bool
    /// How many pages in a row may bring no new item before paging stops.
    public nonisolated let maxPagesWithoutNewItems: Int

    /// The items loaded so far, in listing order, without duplicates.
    public var items: [FeedItem] { listing.items }
    /// The invalid entries of every page loaded so far.
    public var skipped: [SkippedEntry] { listing.skipped }
    /// The warnings of every page loaded so far (fallbacks used, paging stopped early).
    public var warnings: [String] { listing.warnings }
    /// How many items were dropped because their public ID was already in the feed.
    public var duplicateCount: Int { listing.duplicateCount }
    /// How many pages were loaded.
    public var pagesLoaded: Int { listing.pagesLoaded }
    /// Whether the last page has been loaded.
    public var isComplete: Bool { listing.isComplete }
    /// The error of the last load, if it failed; cleared by the next successful load.
    public private(set) var lastLoadError: (any Error)?
    /// How many times ``reload()`` found the listing changed.
    public private(set) var generation = 0

    private var listing = Listing()
    private var loadInFlight: Task<Int, any Error>?
    private var reloadInFlight: Task<FeedChange, any Error>?
    /// Grows with each reload: a page load started before a reload does not add to the listing it replaced.
    private var epoch = 0

    /// Creates a feed over `loader`; nothing is loaded until asked.
    public init(
        loader: any FeedLoader, prefetchDistance: Int = 5, wrapsAround: Bool = false, maxPagesWithoutNewItems: Int = 10
    ) {
        self.loader = loader
        self.prefetchDistance = max(0, prefetchDistance)
        self.wrapsAround = wrapsAround
        self.maxPagesWithoutNewItems = max(1, maxPagesWithoutNewItems)
    }

    /// The number of items loaded so far.
    public var count: Int { items.count }

    /// The item at `index` (0-based), loading pages as needed; the next page is prefetched in the background when
    /// `index` is within ``prefetchDistance`` of the end. `nil` past the end (or for an empty feed) unless
    /// ``wrapsAround``, in which case index `i` is item `i % count` once the end is known.
    public func item(at index: Int) async throws -> FeedItem? {
        guard index >= 0 else { return nil }
        await waitForReload()
        while index >= items.count && !isComplete {
            _ = try await startLoading().value
        }
        prefetchIfNeeded(near: index)
        if index < items.count { return items[index] }
        guard wrapsAround, !items.isEmpty else { return nil }
        return items[index % items.count]
    }

    /// Loads the next page (or joins the load in flight) and returns how many new items it brought; 0 at the end.
    @discardableResult
    public func loadNextPage() async throws -> Int {
        guard loadInFlight != nil || !isComplete else { return 0 }
        return try await startLoading().value
    }

    /// Loads pages until at least `count` items are loaded or the listing ends.
    public func load(atLeast count: Int) async throws {
        await waitForReload()
        while items.count < count && !isComplete {
            _ = try await startLoading().value
        }
    }

    /// Reads the listing again from its first page, as many items as were loaded (or to its end), and puts it in
    /// place of the items loaded so far in one step; ``generation`` grows when anything changed. Readers wait for a
    /// reload in flight; concurrent reloads join one. A failed reload changes nothing.
    /// - Returns: what changed, by public ID (an item in both whose source, size, time or ETag differ is changed).
    @discardableResult
    public func reload() async throws -> FeedChange {
        if let reloadInFlight { return try await reloadInFlight.value }
        let task = Task<FeedChange, any Error> {
            defer { reloadInFlight = nil }
            _ = try? await loadInFlight?.value
            return try await performReload()
        }
        reloadInFlight = task
        return try await task.value
    }

    private func waitForReload() async {
        _ = try? await reloadInFlight?.value
    }

    private func performReload() async throws -> FeedChange {
        let wanted = max(1, items.count)
        var fresh = Listing()
        repeat {
            let page = try await loader.loadPage(at: fresh.nextCursor)
            fresh.apply(page, maxPagesWithoutNewItems: maxPagesWithoutNewItems)
        } while fresh.items.count < wanted && !fresh.isComplete
        let change = FeedChange.between(items, fresh.items)
        epoch += 1
        loadInFlight = nil
        lastLoadError = nil
        listing = fresh
        if !change.isEmpty { generation += 1 }
        return change
    }

    /// Waits for the background load in flight, if any (its error, if any, is in ``lastLoadError``).
    public func waitForPendingLoad() async {
        _ = try? await loadInFlight?.value
    }

    private func prefetchIfNeeded(near index: Int) {
        guard !isComplete, loadInFlight == nil, index + prefetchDistance >= items.count else { return }
        _ = startLoading()
    }

    /// The load in flight, or a new one for the next cursor. The task runs on this actor except while the loader
    /// works, and clears ``loadInFlight`` when it ends.
    private func startLoading() -> Task<Int, any Error> {
        if let loadInFlight { return loadInFlight }
        let cursor = listing.nextCursor
        let loader = loader
        let started = epoch
        let task = Task<Int, any Error> {
            defer { if epoch == started { loadInFlight = nil } }
            do {
                let page = try await loader.loadPage(at: cursor)
                // A reload replaced the listing meanwhile: this page belongs to the one it replaced.
                guard epoch == started else { return 0 }
                lastLoadError = nil
                return listing.apply(page, maxPagesWithoutNewItems: maxPagesWithoutNewItems)
            } catch {
                if epoch == started { lastLoadError = error }
                throw error
            }
        }
        loadInFlight = task
        return task
    }
}

/// A listing read page by page: the items without duplicates, and where paging stands.
struct Listing: Sendable {
    var items: [FeedItem] = []
    var skipped: [SkippedEntry] = []
    var warnings: [String] = []
    var duplicateCount = 0
    var pagesLoaded = 0
    var isComplete = false
    var nextCursor: FeedCursor?
    private var seenCursors: Set<FeedCursor> = []
    private var seenIDs: Set<String> = []
    private var pagesWithoutNewItems = 0

    /// Adds the new items of `page` and moves to its next cursor; returns how many items were new.
    @discardableResult
    mutating func apply(_ page: FeedPage, maxPagesWithoutNewItems: Int) -> Int {
        pagesLoaded += 1
        skipped += page.skipped
        warnings += page.warnings
        var added = 0
        for item in page.items {
            if seenIDs.insert(item.publicID).inserted {
                items.append(item)
                added += 1
            } else {
                duplicateCount += 1
            }
        }
        pagesWithoutNewItems = added == 0 ? pagesWithoutNewItems + 1 : 0
        if let next = page.nextCursor, !seenCursors.insert(next).inserted {
            warnings.append("the listing gave cursor \(next) a second time; paging stopped")
            finish()
        } else if pagesWithoutNewItems >= maxPagesWithoutNewItems {
            warnings.append("\(pagesWithoutNewItems) pages in a row brought no new items; paging stopped")
            finish()
        } else if let next = page.nextCursor {
            nextCursor = next
        } else {
            finish()
        }
        return added
    }

    private mutating func finish() {
        isComplete = true
        nextCursor = nil
    }
}
