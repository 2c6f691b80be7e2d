import Foundation
import Testing
@testable import Feed

@Suite("Feed paging")
struct FeedPagingTests {
    let threePages = [
        [item("a"), item("b"), item("c")],
        [item("d"), item("e"), item("f")],
        [item("g"), item("h"), item("i")],
    ]

    @Test("paging stops at the end: no request after the last page")
    func stopsAtEnd() async throws {
        let loader = ScriptedFeedLoader(pages: threePages)
        let feed = Feed(loader: loader)
        try await feed.load(atLeast: 100)
        #expect(await feed.count == 9)
        #expect(await feed.isComplete)
        #expect(try await feed.loadNextPage() == 0)
        #expect(try await feed.item(at: 9) == nil)
        #expect(await loader.requests == [nil, .page(2), .page(3)])
    }

    @Test("repeated items are dropped, the first kept")
    func deduplicates() async throws {
        let loader = ScriptedFeedLoader(pages: [
            [item("a"), item("b"), item("c")],
            [item("c", day: 9), item("d"), item("a")],
            [item("e"), item("d")],
        ])
        let feed = Feed(loader: loader)
        try await feed.load(atLeast: 100)
        #expect(await feed.items.map(\.publicID) == ["a", "b", "c", "d", "e"])
        #expect(await feed.items[2].createdAt == iso("2026-11-01T10:00:00Z"))
        #expect(await feed.duplicateCount == 3)
    }

    @Test("a listing that repeats a cursor stops instead of looping")
    func cursorLoop() async throws {
        let loader = ScriptedFeedLoader([
            nil: .page(FeedPage(items: [item("a")], nextCursor: .token("x"))),
            .token("x"): .page(FeedPage(items: [item("b")], nextCursor: .token("x"))),
        ])
        let feed = Feed(loader: loader)
        try await feed.load(atLeast: 100)
        #expect(await feed.items.map(\.publicID) == ["a", "b"])
        #expect(await feed.isComplete)
        #expect(await feed.warnings.count == 1)
        #expect(await loader.requests.count == 2)
    }

    @Test("pages without new items stop paging after the limit")
    func emptyPages() async throws {
        var answers: [FeedCursor?: ScriptedFeedLoader.Answer] = [
            nil: .page(FeedPage(items: [item("a")], nextCursor: .page(2))),
        ]
        for number in 2...50 {
            answers[.page(number)] = .page(FeedPage(items: [item("a")], nextCursor: .page(number + 1)))
        }
        let loader = ScriptedFeedLoader(answers)
        let feed = Feed(loader: loader, maxPagesWithoutNewItems: 3)
        #expect(try await feed.item(at: 1) == nil)
        #expect(await feed.isComplete)
        #expect(await loader.requests.count == 4)
    }

    @Test("wrap-around: after the last item comes the first")
    func wrapAround() async throws {
        let feed = Feed(loader: ScriptedFeedLoader(pages: threePages), wrapsAround: true)
        #expect(try await feed.item(at: 8)?.publicID == "i")
        #expect(try await feed.item(at: 9)?.publicID == "a")
        #expect(try await feed.item(at: 10)?.publicID == "b")
        #expect(try await feed.item(at: 9 * 3 + 4)?.publicID == "e")
        #expect(try await Feed(loader: ScriptedFeedLoader(pages: [[]]), wrapsAround: true).item(at: 3) == nil)
    }

    @Test("the next page is requested only when the reader comes within K items of the end")
    func prefetchDistance() async throws {
        let loader = ScriptedFeedLoader(pages: threePages)
        let feed = Feed(loader: loader, prefetchDistance: 2)
        #expect(try await feed.item(at: 0)?.publicID == "a")
        await feed.waitForPendingLoad()
        #expect(await loader.requests == [nil])

        #expect(try await feed.item(at: 1)?.publicID == "b")
        await feed.waitForPendingLoad()
        #expect(await loader.requests == [nil, .page(2)])
        #expect(await feed.count == 6)

        #expect(try await feed.item(at: 3)?.publicID == "d")
        await feed.waitForPendingLoad()
        #expect(await feed.count == 6)
        #expect(try await feed.item(at: 4)?.publicID == "e")
        await feed.waitForPendingLoad()
        #expect(await feed.count == 9)
    }

    @Test("readers asking at the same time share one load per page")
    func concurrentReaders() async throws {
        let loader = ScriptedFeedLoader(pages: threePages)
        let feed = Feed(loader: loader, prefetchDistance: 0)
        let ids = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<8 { group.addTask { try await feed.item(at: 4)?.publicID } }
            return try await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(ids == Array(repeating: "e", count: 8))
        #expect(await loader.requests == [nil, .page(2)])
    }

    @Test("a failed load changes nothing and is reported")
    func failedLoad() async throws {
        let loader = ScriptedFeedLoader([
            nil: .page(FeedPage(items: [item("a")], nextCursor: .page(2))),
            .page(2): .failure(.timedOut(url: "http://example.com/feed")),
        ])
        let feed = Feed(loader: loader, prefetchDistance: 0)
        #expect(try await feed.item(at: 0)?.publicID == "a")
        await #expect(throws: FeedError.timedOut(url: "http://example.com/feed")) { try await feed.item(at: 1) }
        #expect(await feed.count == 1)
        #expect(await feed.isComplete == false)
        #expect(await feed.lastLoadError as? FeedError == .timedOut(url: "http://example.com/feed"))
    }
}
