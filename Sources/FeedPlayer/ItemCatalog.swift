import EngineSupport
import Feed

/// The items a ``FeedPlayer`` plays, in feed order, growing as pages arrive: read by the player, its preparer's
/// workers and the front end on any thread.
final class ItemCatalog: Sendable {
    private let state: Locked<(items: [FeedItem], sources: [String])>

    init(_ items: [FeedItem]) {
        state = Locked((items, items.map(Self.source)))
    }

    /// A path for Media: a file URL's path, any other URL as text.
    static func source(_ item: FeedItem) -> String {
        item.source.isFileURL ? item.source.path : item.source.absoluteString
    }

    var items: [FeedItem] { state.withLock { $0.items } }
    var count: Int { state.withLock { $0.items.count } }
    func item(at index: Int) -> FeedItem? { state.withLock { $0.items.indices.contains(index) ? $0.items[index] : nil } }
    func source(at index: Int) -> String { state.withLock { $0.sources[index] } }

    /// Appends `items` after the ones held; indexes already handed out keep their items.
    func append(_ items: [FeedItem]) {
        state.withLock {
            $0.items += items
            $0.sources += items.map(Self.source)
        }
    }
}
