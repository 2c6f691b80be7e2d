import Feed
import Foundation

/// A test double: answers each cursor with a scripted page (or error) and counts the calls.
actor ScriptedFeedLoader: FeedLoader {
    enum Answer {
        case page(FeedPage)
        case failure(FeedError)
    }

    private let answers: [FeedCursor?: Answer]
    private(set) var requests: [FeedCursor?] = []

    init(_ answers: [FeedCursor?: Answer]) {
        self.answers = answers
    }

    /// Pages of items named by `pages`, linked by `.page(n)` cursors (first page is `nil`, then `.page(2)`, …).
    init(pages: [[FeedItem]]) {
        var answers: [FeedCursor?: Answer] = [:]
        for (index, items) in pages.enumerated() {
            let cursor: FeedCursor? = index == 0 ? nil : .page(index + 1)
            let next: FeedCursor? = index + 1 < pages.count ? .page(index + 2) : nil
            answers[cursor] = .page(FeedPage(items: items, nextCursor: next))
        }
        self.init(answers)
    }

    func loadPage(at cursor: FeedCursor?) async throws -> FeedPage {
        requests.append(cursor)
        switch answers[cursor] {
        case .page(let page)?: return page
        case .failure(let error)?: throw error
        case nil: throw FeedError.invalidCursor(cursor ?? .page(1), reason: "not scripted")
        }
    }
}

/// An item for paging tests.
func item(_ id: String, day: Int = 1) -> FeedItem {
    FeedItem(
        publicID: id,
        createdAt: iso(String(format: "2026-11-%02dT10:00:00Z", day)),
        source: URL(string: "https://cdn.example.com/\(id).mp4")!)
}
