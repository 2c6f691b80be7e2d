import EngineSupport
import Foundation
import TestSupport
import Testing
@testable import Feed

/// Against feed_server.py on 127.0.0.1. Each test starts its own server, so counters never mix.
@Suite("Remote loader over HTTP")
struct RemoteFeedLoaderTests {
    let quickRetry = RetryPolicy(maxAttempts: 3, initialDelay: 0.05, jitter: 0)

    @Test("Cloudinary: max_results and next_cursor page through the whole listing")
    func cloudinaryPaging() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(url: server.url("/cloudinary/videos"), format: .cloudinary, pageSize: 3)
            let first = try await loader.loadPage(at: nil)
            #expect(first.items.map(\.publicID) == ["samples/travel/clip_0", "samples/travel/clip_1",
                                                    "samples/travel/clip_2"])
            guard case .token(let cursor)? = first.nextCursor else {
                Issue.record("no next_cursor")
                return
            }
            #expect(cursor.contains("+") && cursor.contains("/"))
            let all = try await loader.loadAll()
            #expect(all.items.map(\.publicID) == (0..<7).map { "samples/travel/clip_\($0)" })
            #expect(all.nextCursor == nil)
            #expect(try await server.requestCount("/cloudinary/videos") == 4)
        }
    }

    @Test("a load cancelled at any moment, before its request starts included, ends (it never waits for ever)")
    func cancelledAtAnyMoment() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(url: server.url("/cloudinary/videos"), format: .cloudinary, pageSize: 3,
                                          timeout: 30)
            for attempt in 0..<60 {
                let load = Task { try await loader.loadAll() }
                // 0 to 5 ms: at times before the transfer is registered, at times while it runs, at times after.
                if attempt % 6 != 0 { try await Task.sleep(nanoseconds: UInt64(attempt % 6) * 1_000_000) }
                load.cancel()
                // Bounded: a load that never ends fails the test instead of hanging it (the hung task is left).
                let ended = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    let once = Locked(false)
                    let answer: @Sendable (Bool) -> Void = { value in
                        if !once.withLock({ done in defer { done = true }; return done }) {
                            continuation.resume(returning: value)
                        }
                    }
                    Task { _ = await load.result; answer(true) }
                    Task { try? await Task.sleep(for: .seconds(20)); answer(false) }
                }
                #expect(ended, "attempt \(attempt): the cancelled load never ended")
                if !ended { break }
            }
        }
    }

    @Test("pages that never end stop at the listing's size limit, counted over all pages from the first")
    func endlessPages() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(url: server.url("/endless/videos"), format: .cloudinary,
                                          maxListingBytes: 64 * 1024)
            await #expect {
                _ = try await loader.loadAll(maxPages: 100_000)
            } throws: { error in
                if case FeedError.tooLarge(_, let limit) = error { return limit == 64 * 1024 }
                return false
            }
            let requests = try await server.requestCount("/endless/videos")
            #expect(requests > 5 && requests < 100, "\(requests) pages")
            // A new walk from the first page starts the count again.
            #expect(try await loader.loadPage(at: nil).items.count == 7)
        }
    }

    @Test("Pexels: page and per_page, or following next_page, give the same items")
    func pexelsPaging() async throws {
        try await withFeedServer { server async throws in
            let byNumber = RemoteFeedLoader(url: server.url("/pexels/videos/popular"), format: .pexels, pageSize: 2)
            let following = RemoteFeedLoader(
                url: server.url("/pexels/videos/popular"), format: .pexels, pageSize: 2,
                pexelsPaging: .followNextPage)
            let first = try await byNumber.loadPage(at: nil)
            #expect(first.nextCursor == .page(2))
            #expect(first.items.first?.source.absoluteString == "https://videos.pexels.example/1000/hd.mp4")
            let numbered = try await byNumber.loadAll()
            let followed = try await following.loadAll()
            #expect(numbered.items.map(\.publicID) == ["1000", "1001", "1002", "1003", "1004"])
            #expect(followed.items.map(\.publicID) == numbered.items.map(\.publicID))
            #expect(try await server.requestCount("/pexels/videos/popular") == 7)
        }
    }

    @Test("Feed over a paged listing whose pages overlap: every item once, paging stops at the end")
    func feedOverHTTP() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(
                url: server.url("/cloudinary/videos?repeat=1"), format: .cloudinary, pageSize: 3)
            let feed = Feed(loader: loader, prefetchDistance: 2)
            try await feed.load(atLeast: 100)
            #expect(await feed.items.map(\.publicID) == (0..<7).map { "samples/travel/clip_\($0)" })
            #expect(await feed.duplicateCount == 2)
            #expect(await feed.isComplete)
            #expect(try await feed.loadNextPage() == 0)
            #expect(try await server.requestCount("/cloudinary/videos") == 3)
        }
    }

    @Test("a manifest is one page; its relative urls resolve against the listing's URL")
    func manifest() async throws {
        try await withFeedServer { server async throws in
            let page = try await RemoteFeedLoader(url: server.url("/manifest.json"), format: nil).loadPage(at: nil)
            #expect(page.items.map(\.source.absoluteString) == [
                server.url("/media/one.mp4").absoluteString, "https://cdn.example/two.mp4",
            ])
            #expect(page.nextCursor == nil)
        }
    }

    @Test("a 500 is retried and the retry succeeds")
    func retriedServerError() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(url: server.url("/flaky/a"), format: .manifest, retry: quickRetry)
            #expect(try await loader.loadPage(at: nil).items.count == 2)
            #expect(try await server.requestCount("/flaky/a") == 2)
        }
    }

    @Test("a 503 that never ends fails after the last attempt, naming URL and status")
    func exhaustedRetries() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(url: server.url("/unavailable/a"), format: .manifest, retry: quickRetry)
            await #expect(throws: FeedError.httpStatus(url: server.url("/unavailable/a").absoluteString, status: 503)) {
                try await loader.loadPage(at: nil)
            }
            #expect(try await server.requestCount("/unavailable/a") == 3)
        }
    }

    @Test("a 404 is not retried: the server sees exactly one request")
    func notFoundNotRetried() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(url: server.url("/missing/a"), format: .manifest, retry: quickRetry)
            do {
                _ = try await loader.loadPage(at: nil)
                Issue.record("a 404 loaded")
            } catch let error as FeedError {
                #expect(error == .httpStatus(url: server.url("/missing/a").absoluteString, status: 404))
                #expect(error.description == "GET \(server.url("/missing/a")) failed with HTTP 404 (Not Found)")
            }
            #expect(try await server.requestCount("/missing/a") == 1)
        }
    }

    @Test("an answer slower than the timeout is a typed timeout error")
    func timeout() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(url: server.url("/slow/a"), format: .manifest, timeout: 0.5, retry: .never)
            let start = ContinuousClock.now
            await #expect(throws: FeedError.timedOut(url: server.url("/slow/a").absoluteString)) {
                try await loader.loadPage(at: nil)
            }
            // Only a lower bound: the client waited for the timeout (the server answers after 3 s).
            #expect(ContinuousClock.now - start >= .milliseconds(450))
        }
    }

    @Test("timeouts are retried too")
    func timeoutRetried() async throws {
        try await withFeedServer { server async throws in
            let retry = RetryPolicy(maxAttempts: 2, initialDelay: 0.05, jitter: 0)
            let loader = RemoteFeedLoader(url: server.url("/slow/b"), format: .manifest, timeout: 0.5, retry: retry)
            let start = ContinuousClock.now
            await #expect(throws: FeedError.timedOut(url: server.url("/slow/b").absoluteString)) {
                try await loader.loadPage(at: nil)
            }
            // Two attempts, each waiting out its timeout (lower bound only; a loaded machine may be slower).
            #expect(ContinuousClock.now - start >= .milliseconds(900))
            #expect(try await server.requestCount("/slow/b") <= 2)
        }
    }

    @Test("malformed JSON is a typed error, not retried")
    func malformed() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(url: server.url("/malformed"), format: .cloudinary, retry: quickRetry)
            do {
                _ = try await loader.loadPage(at: nil)
                Issue.record("malformed JSON loaded")
            } catch FeedError.malformedDocument(let source, let reason) {
                #expect(source == server.url("/malformed").absoluteString)
                #expect(reason.hasPrefix("not valid JSON"))
            }
            #expect(try await server.requestCount("/malformed") == 1)
        }
    }

    @Test("Authorization from an environment variable or a credentials file; never in errors")
    func authorization() async throws {
        try await withFeedServer { server async throws in
            let url = server.url("/private/manifest.json")
            let anonymous = RemoteFeedLoader(url: url, format: .manifest)
            await #expect(throws: FeedError.httpStatus(url: url.absoluteString, status: 401)) {
                try await anonymous.loadPage(at: nil)
            }
            let fromEnvironment = RemoteFeedLoader(
                url: url, format: .manifest, authorization: .environment("FEED_TOKEN"),
                environment: ["FEED_TOKEN": "Bearer s3cret-token"])
            #expect(try await fromEnvironment.loadPage(at: nil).items.count == 2)

            try await withTemporaryDirectory { directory async throws in
                let file = try directory.write("token", "Bearer s3cret-token\n")
                let fromFile = RemoteFeedLoader(url: url, format: .manifest, authorization: .file(file))
                #expect(try await fromFile.loadPage(at: nil).items.count == 2)
                let wrong = try directory.write("wrong", "Bearer wrong-secret")
                do {
                    _ = try await RemoteFeedLoader(url: url, format: .manifest, authorization: .file(wrong))
                        .loadPage(at: nil)
                    Issue.record("a wrong token loaded")
                } catch {
                    #expect(!"\(error)".contains("wrong-secret"))
                }
            }

            let unset = RemoteFeedLoader(
                url: url, format: .manifest, authorization: .environment("FEED_TOKEN"), environment: [:])
            await #expect(throws: FeedError.credentialsUnavailable(
                reason: "environment variable FEED_TOKEN is not set")) {
                try await unset.loadPage(at: nil)
            }
        }
    }

    @Test("credentials are not sent along a redirect to another origin")
    func redirectDropsAuthorization() async throws {
        try await withFeedServer { server async throws in
            let loader = RemoteFeedLoader(
                url: server.url("/redirect-elsewhere"), format: .manifest, authorization: .environment("T"),
                environment: ["T": "Bearer s3cret-token"])
            #expect(try await loader.loadPage(at: nil).items.map(\.publicID) == ["auth-absent"])
            let direct = RemoteFeedLoader(
                url: server.url("/echo-auth"), format: .manifest, authorization: .environment("T"),
                environment: ["T": "Bearer s3cret-token"])
            #expect(try await direct.loadPage(at: nil).items.map(\.publicID) == ["auth-present"])
        }
    }

    @Test("errors name the URL without user info or secret query values")
    func redactedErrors() async throws {
        try await withFeedServer { server async throws in
            let url = URL(string: "http://user:hunter2@127.0.0.1:\(server.port)/missing/b?api_key=SECRET1&page=2")!
            do {
                _ = try await RemoteFeedLoader(url: url, format: .manifest).loadPage(at: nil)
                Issue.record("a 404 loaded")
            } catch {
                let message = "\(error)"
                #expect(message.contains("http://127.0.0.1:\(server.port)/missing/b?api_key=REDACTED&page=2"))
                #expect(!message.contains("hunter2") && !message.contains("SECRET1"))
            }
        }
    }

    @Test("a closed port is a transport error, not retried")
    func connectionRefused() async throws {
        // Held closed for the whole test: a port freed by a stopped server could be another test's server by now.
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let port = closed.port
        let loader = RemoteFeedLoader(
            url: URL(string: "http://127.0.0.1:\(port)/manifest.json")!, format: .manifest, retry: quickRetry)
        do {
            _ = try await loader.loadPage(at: nil)
            Issue.record("a closed port answered")
        } catch let error as FeedError {
            guard case .transport(let url, _) = error else {
                Issue.record("expected a transport error, got \(error)")
                return
            }
            #expect(url == "http://127.0.0.1:\(port)/manifest.json")
        }
    }
}
