import EngineSupport
import Feed
@testable import FeedServer
import Foundation
import Logging
import Media
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
import Transcode
#endif

/// `videofeed serve` attacked as a hostile client would (issue 33): WebSocket messages with numbers out of any range
/// and handshakes from other sites, paths of any depth, clients that never read, never finish a request or send what
/// is not HTTP, half-closed clients, and what error answers may say.
@Suite(.serialized) struct ServeAttackTests {
    static let clip = TestFixtures.media("h264_portrait.mp4")

    /// Raw bytes to the server on one connection; what comes back until the server closes (or `timeout` seconds), and
    /// whether it closed.
    static func raw(_ port: Int, _ bytes: [UInt8], timeout: Double = 20,
                    halfClose: Bool = false) throws -> (text: String, closed: Bool) {
        let fd = try LoopbackHTTP.connect(port, timeout: timeout)
        defer { close(fd) }
        try LoopbackHTTP.send(fd, bytes)
        if halfClose { shutdown(fd, Int32(SHUT_WR)) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, 65536, 0) }
            if n < 0 && errno == EINTR { continue }
            if n == 0 { return (String(decoding: data, as: UTF8.self), true) }
            if n < 0 { return (String(decoding: data, as: UTF8.self), errno == ECONNRESET) }
            data.append(contentsOf: buffer[0..<n])
        }
    }

    // MARK: - WebSocket

    @Test func aViewerMessageWithAnyNumberLeavesTheServerServing() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.clip])))
        defer { Task { await server.stop() } }
        let port = server.port
        let reply = try await offPool { () -> String in
            let ws = try LoopbackHTTP.WebSocket(port: port, path: "/api/ws")
            // The message that trapped (an overflow planning the window around an index near Int.max), and its kin.
            for bad in [#"{"type":"at","index":4700000000000000000,"time":0}"#,
                        #"{"type":"at","index":9223372036854775807,"time":1e308}"#,
                        #"{"type":"at","index":-1,"time":0}"#, #"{"type":"at","index":0,"time":-5}"#,
                        #"{"type":"at","index":1e300}"#, #"{"type":"hello","width":9223372036854775807,"height":1}"#,
                        #"{"type":"at","index":"0"}"#, "not json", #"{"type":["at"]}"#] {
                try ws.send(bad)
            }
            try ws.send(#"{"type":"at","index":0,"time":0}"#)
            return try ws.receive()
        }
        // Every bad message was ignored; the good one is answered.
        #expect(reply.contains(#""type":"swipe""#) || reply.contains(#""type":"window""#), "\(reply)")
        #expect(reply.contains(#""index":0"#) || reply.contains(#""current":0"#))
        #expect(try await server.get("/healthz").status == 200)
    }

    @Test func viewerMessagesAreBoundedBeforeTheyReachTheHub() {
        #expect(ViewerMessage.parse(#"{"type":"at","index":3,"time":1.5}"#) == .at(index: 3, item: nil, time: 1.5))
        #expect(ViewerMessage.parse(#"{"type":"at","index":3}"#) == .at(index: 3, item: nil, time: 0))
        #expect(ViewerMessage.parse(#"{"type":"hello","width":1080,"height":1920,"rendition":"720x1280"}"#)
                == .hello(width: 1080, height: 1920, rendition: "720x1280"))
        for bad in [#"{"type":"at","index":1000000000}"#, #"{"type":"at","index":-1}"#,
                    #"{"type":"at","index":1,"time":86401}"#, #"{"type":"at","index":1,"time":-0.1}"#,
                    #"{"type":"hello","width":0}"#, #"{"type":"hello","height":16385}"#,
                    #"{"type":"hello","rendition":"\#(String(repeating: "x", count: 65))"}"#,
                    #"{"type":"at","index":1.5}"#, #"{"type":"bye"}"#, "[]", ""] {
            #expect(ViewerMessage.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func onlyTheServersOwnPageMayOpenAViewerSocket() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.clip])),
                                                   options: { $0.allowedOrigins = ["https://app.example.com"] })
        defer { Task { await server.stop() } }
        let port = server.port
        let opened = { @Sendable (origin: String?) -> Bool in
            (try? LoopbackHTTP.WebSocket(port: port, path: "/api/ws", origin: origin)) != nil
        }
        let results = try await offPool {
            ["own": opened("http://127.0.0.1:\(port)"), "none": opened(nil),
             "evil": opened("http://evil.example"), "port": opened("http://127.0.0.1:\(port + 1)"),
             "null": opened("null"), "allowed": opened("https://app.example.com")]
        }
        #expect(results == ["own": true, "none": true, "evil": false, "port": false, "null": false, "allowed": true])
        // The rule alone: the Host's origin in either scheme, default ports included.
        #expect(FeedServer.allows(origin: "https://feed.example.com", host: "feed.example.com", allowed: []))
        #expect(FeedServer.allows(origin: "http://feed.example.com:80", host: "feed.example.com", allowed: []))
        #expect(!FeedServer.allows(origin: "http://feed.example.com.evil", host: "feed.example.com", allowed: []))
        #expect(!FeedServer.allows(origin: "http://x@feed.example.com", host: "feed.example.com", allowed: []))
        #expect(FeedServer.allows(origin: "http://anything", host: "h", allowed: ["*"]))
        #expect(FeedServer.allows(origin: "http://[::1]:8080", host: "[::1]:8080", allowed: []))
        #expect(!FeedServer.allows(origin: "http://[::2]:8080", host: "[::1]:8080", allowed: []))
        #expect(FeedServer.allows(origin: "https://app.example.com", host: "h", allowed: ["HTTPS://App.Example.com/"]))
    }

    // MARK: - Paths

    @Test func mediaPathsHaveAFixedShape() {
        let ok = MediaPath("serve/00_clip.7d35c8d3/720x1280/seg-12.m4s")
        #expect(ok?.candidates.map(\.folder) == ["serve/00_clip.7d35c8d3"])
        #expect(ok?.candidates.map(\.file) == ["720x1280/seg-12.m4s"])
        #expect(MediaPath("a.0123abcd/poster.jpg")?.candidates.map(\.folder) == ["a.0123abcd"])
        // Both splits when the shape allows both (a public ID folder that looks like an item folder).
        #expect(MediaPath("x.01234567/y.89abcdef/init.mp4")?.candidates.count == 2)
        #expect(MediaPath("x.01234567/720x1280.mp4")?.candidates.count == 1)
        for bad in ["", "a.0123abcd", "a.0123ABCD/poster.jpg", "a.0123abc/poster.jpg", "a.0123abcd/../poster.jpg",
                    "a.0123abcd/%2e%2e/poster.jpg", "a.0123abcd/x%2fy/seg-0.m4s", "a.0123abcd/poster.jpg%00",
                    "a.0123abcd//poster.jpg", "a.0123abcd/secret.txt", "a.0123abcd/r/x.mp4"] {
            #expect(MediaPath(Substring(bad)) == nil, "\(bad)")
        }
        // Deep or long paths are refused by their length before any lookup.
        let deep = String(repeating: "a/", count: 12_000) + "x.12345678/poster.jpg"
        #expect(MediaPath(Substring(deep)) == nil)
        let many = String(repeating: "a/", count: 40) + "x.12345678/poster.jpg"
        #expect(MediaPath(Substring(many)) == nil)
    }

    @Test func unknownFoldersAreResolvedByAnIndexReadOnce() async throws {
        // 3,000 items; 40 lookups of folders no item has read the feed once, not 40 times.
        let root = try TestFixtures.temporaryFolder("serve-many")
        var items: [[String: Any]] = []
        for n in 0..<3000 {
            items.append(["public_id": "p/item\(n)", "created_at": "2026-01-01T00:00:00Z", "url": Self.clip])
        }
        let manifest = root.appendingPathComponent("feed.json")
        try JSONSerialization.data(withJSONObject: items).write(to: manifest)
        let catalog = ServedCatalog(feed: Feed(loader: ManifestFeedLoader(file: manifest)), settings: TranscodeSettings(),
                                    onEntry: { _ in })
        for n in 0..<40 {
            #expect(await catalog.resolve(folder: "p/nothing\(n).0123abcd") == false)
        }
        #expect(await catalog.itemsIndexed == 3000)
        // A real item's folder is found by the index (another replica listed it), with its version.
        let entry = try #require(try await catalog.entry(at: 2999))
        let fresh = ServedCatalog(feed: Feed(loader: ManifestFeedLoader(file: manifest)),
                                  settings: TranscodeSettings(), onEntry: { _ in })
        #expect(await fresh.resolve(folder: entry.folder))
        #expect(await fresh.resolve(folder: "p/item2999.0123abcd") == false)
        // Lookups at once (a restarted replica asked for many segments) each find their item.
        var folders: [String] = []
        for n in [5, 700, 701, 1500, 2998] { folders.append(try #require(try await catalog.entry(at: n)).folder) }
        let third = ServedCatalog(feed: Feed(loader: ManifestFeedLoader(file: manifest)),
                                  settings: TranscodeSettings(), onEntry: { _ in })
        let found = await withTaskGroup(of: Bool.self) { group in
            for folder in folders + folders { group.addTask { await third.resolve(folder: folder) } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(found == Array(repeating: true, count: 10))
        #expect(await third.itemsIndexed == 2999)
    }

    @Test func aDeepPathIsRefusedAtOnce() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.clip])))
        defer { Task { await server.stop() } }
        let deep = "/media/" + String(repeating: "a/", count: 8000) + "x.12345678/poster.jpg"
        #expect(try await server.get(deep).status == 404)
        #expect(try await server.get("/media/a/b/c.12345678/poster.jpg").status == 404)
    }

    // MARK: - Connections

    @Test func requestsThatAreNotHTTPGetAnAnswerAndAreClosed() async throws {
        let folder = try ServeFeeds.folder([Self.clip])
        // Heads that are refused for what they are, on a server whose head timeout cannot come first however slow
        // the machine (a sanitizer build under the parallel run once took over a second over a 100 KB head).
        let patient = try await ServerHarness.start(ServeFeeds.loader(folder), options: {
            $0.limits.headerTimeout = 600
        })
        defer { Task { await patient.stop() } }
        // Heads that never finish, on a server whose timeouts are short: the timeout is what is tested.
        let server = try await ServerHarness.start(ServeFeeds.loader(folder), options: {
            $0.limits.headerTimeout = 1
            $0.limits.idleTimeout = 1
        })
        defer { Task { await server.stop() } }
        let port = server.port
        let refused: [(String, [UInt8], String)] = [
            ("TLS", [0x16, 0x03, 0x01, 0x00, 0x2a, 0x01, 0x00, 0x00, 0x26, 0x03, 0x03] + Array(repeating: 0x5a, count: 40),
             "400"),
            ("HTTP/9.9", Array("GET / HTTP/9.9\r\nHost: x\r\n\r\n".utf8), "400"),
            ("raw UTF-8", Array("GET /media/".utf8) + [0xc3, 0xa9] + Array(" HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "400"),
            ("CL+TE", Array(("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                             + "0\r\n\r\n").utf8), "400"),
            ("100 KB header", Array(("GET / HTTP/1.1\r\nHost: x\r\nX-A: " + String(repeating: "a", count: 100_000)
                                     + "\r\n\r\n").utf8), "431"),
            // Exactly at the limit (32 KiB with its blank line) is a head; one byte more is not.
            ("32 KiB head", Array(("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-A: "
                                   + String(repeating: "a", count: 32 * 1024 - 60) + "\r\n\r\n").utf8), "200"),
            ("32 KiB + 1 head", Array(("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-A: "
                                       + String(repeating: "a", count: 32 * 1024 - 59) + "\r\n\r\n").utf8), "431"),
        ]
        let timedOut: [(String, [UInt8], String)] = [
            ("half a request", Array("GET /healthz HTTP/1.1\r\nHost: x\r\n".utf8), "408"),
            ("HTTP/0.9", Array("GET /\r\n".utf8), "408"),
            // Blank lines before a request start no head: closed at the head timeout, not held as a started one.
            ("blank lines", Array("\r\n\r\n\r\n".utf8), "408"),
        ]
        for (cases, target) in [(refused, patient.port), (timedOut, port)] {
            for (name, bytes, status) in cases {
                let answer = try await offPool { try Self.raw(target, bytes) }
                #expect(answer.text.hasPrefix("HTTP/1.1 \(status)"), "\(name): \(answer.text.prefix(80))")
                #expect(answer.closed, "\(name) was left open")
            }
        }
        // A kept-alive connection that goes quiet is closed; one that sends its next request in time is answered.
        let idle = try await offPool {
            try Self.raw(port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        }
        #expect(idle.text.hasPrefix("HTTP/1.1 200") && idle.closed)
        #expect(try await server.get("/healthz").status == 200)
    }

    @Test func theConnectionLimitDisplacesUnfinishedRequestsThenAnswers503() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.clip])), options: {
            $0.limits.maxConnections = 4
            $0.limits.reservedFiles = 0
            // However slow the machine, the unfinished requests are still waiting when the fifth comes.
            $0.limits.headerTimeout = 600
        })
        defer { Task { await server.stop() } }
        let port = server.port
        // Four connections that never finish their request: a fifth displaces the oldest and is answered.
        var slow: [Int32] = []
        defer { slow.forEach { close($0) } }
        for _ in 0..<4 {
            let fd = try LoopbackHTTP.connect(port, timeout: 20)
            try LoopbackHTTP.send(fd, Array("GET /healthz HTTP/1.1\r\n".utf8))
            slow.append(fd)
        }
        #expect(try await Self.eventually { server.server.openConnections == 4 })
        #expect(try await server.get("/healthz").status == 200)
        // Four connections that sent a whole request and stay open (kept alive): nobody to displace, so 503.
        slow.forEach { close($0) }
        slow = []
        for _ in 0..<4 {
            let fd = try LoopbackHTTP.connect(port, timeout: 20)
            try LoopbackHTTP.send(fd, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, 4096, 0) }
            slow.append(fd)
        }
        #expect(try await Self.eventually { server.server.openConnections == 4 })
        let refused = try await server.get("/healthz")
        #expect(refused.status == 503 && refused.headers["retry-after"] == "1", "\(refused.status)")
        slow.forEach { close($0) }
        slow = []
        var answered = false
        for _ in 0..<100 where !answered {
            answered = try await server.get("/healthz").status == 200
            if !answered { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(answered)
    }

    @Test func anAnswerThatMakesNoProgressEndsItsConnection() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.clip])), options: {
            $0.limits.writeTimeout = 1
        })
        defer { Task { await server.stop() } }
        let card = try #require(try await server.allCards().first)
        let mp4 = try #require((card["renditions"] as? [[String: Any]])?.first?["mp4"] as? String)
        let size = 32 << 20
        try server.engine.cache.write(String(mp4.dropFirst("/media/".count)), [UInt8](repeating: 0x42, count: size))
        let fd = try LoopbackHTTP.connect(server.port, timeout: 20)
        defer { close(fd) }
        var small: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        try LoopbackHTTP.send(fd, Array("GET \(mp4) HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(try await Self.eventually { server.server.openConnections == 1 })
        // The client reads nothing: the connection goes after the write timeout (1 s), its slot with it.
        #expect(try await Self.eventually { server.server.openConnections == 0 })
    }

    /// Whether `condition` holds within 10 s (checked every 20 ms).
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    @Test func aClientThatHalfClosesAfterItsRequestStillGetsTheSegment() async throws {
        let server = try await ServerHarness.start(
            ServeFeeds.loader(try ServeFeeds.folder([TestFixtures.transcode("long_gop_b.mp4")])), workers: 1)
        defer { Task { await server.stop() } }
        let card = try #require(try await server.allCards().first)
        // Segment 1: not made with the manifest, so the request waits for its job while the client is half-closed.
        let segment = try #require((card["renditions"] as? [[String: Any]])?.first?["segments"] as? [String])[1]
        let port = server.port
        let answer = try await offPool {
            try Self.raw(port, Array("GET \(segment) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8),
                         timeout: 120, halfClose: true)
        }
        // An interim 100 Continue (the probe) may come first; then the segment.
        let final = answer.text.replacingOccurrences(of: "HTTP/1.1 100 Continue\r\n\r\n", with: "")
        #expect(final.hasPrefix("HTTP/1.1 200"), "\(answer.text.prefix(120))")
        #expect(server.engine.cache.contains(String(segment.dropFirst("/media/".count))))
    }

    // MARK: - What answers say

    @Test func errorAnswersNameTheItemNotTheServersPaths() async throws {
        let folder = try ServeFeeds.folder([Self.clip, TestFixtures.bad("truncated.mp4")])
        let server = try await ServerHarness.start(ServeFeeds.loader(folder))
        defer { Task { await server.stop() } }
        let cards = try await server.allCards(limit: 5, pending: true)
        let broken = try #require(cards.first { ($0["public_id"] as? String)?.contains("truncated") == true })
        let poster = try await server.get(try #require(broken["poster"] as? String))
        #expect(poster.status == 422)
        #expect(poster.text.contains("truncated"), "\(poster.text)")
        for secret in [folder.path, server.cache.path, "/tmp/", "/work/", "pid"] {
            #expect(!poster.text.contains(secret), "\(poster.text)")
        }
        let card = try #require(try await server.allCards(limit: 5).first { $0["error"] != nil })
        let error = try #require(card["error"] as? String)
        #expect(!error.contains(folder.path) && !error.contains(server.cache.path), "\(error)")
        // The words of an error with paths and a token in it.
        let text = ClientText.withoutPaths(
            "open failed: /srv/feed/a b/clip.mp4: (\"/var/cache/x/.tmp-123-4\") https://cdn.example.com/c.mp4?hdnts=x~hmac=y")
        #expect(text == "open failed: a b/clip.mp4: (\".tmp-123-4\") https://cdn.example.com/c.mp4?hdnts=REDACTED",
                "\(text)")
    }

    @Test func aCardDoesNotGrowWithTheDurationAnUploadClaims() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.clip])))
        defer { Task { await server.stop() } }
        _ = try await server.allCards()
        let entry = try #require(try await server.engine.catalog.entry(at: 0))
        var manifest = try #require(server.engine.knownManifest(entry.folder))
        // The header of sample_fragmented.mp4 claims 143,165 s: 71,584 segments a rendition.
        manifest.plan.duration = 143_165
        manifest.plan.lastFrameStart = 143_164
        #expect(manifest.plan.segmentCount > 70_000)
        let card = Card(entry: entry, manifest: manifest, settings: server.engine.configuration.settings,
                        cached: server.engine.cache.contains)
        for rendition in try #require(card.renditions) {
            #expect(rendition.segments.count == Card.maxListedSegments)
            #expect(rendition.segmentDurations.count == rendition.segments.count)
        }
        let bytes = try JSONEncoder().encode(card)
        #expect(bytes.count < 100_000, "\(bytes.count) bytes")
    }

    // MARK: - HTTP

    @Test func ifRangeAndWeakValidatorsFollowRFC9110() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.clip])))
        defer { Task { await server.stop() } }
        let card = try #require(try await server.allCards().first)
        let poster = try #require(card["poster"] as? String)
        let whole = try await server.get(poster)
        let tag = try #require(whole.headers["etag"])
        // A weak If-None-Match compares weakly: 304.
        #expect(try await server.get(poster, headers: ["If-None-Match": "W/\(tag)"]).status == 304)
        #expect(try await server.get(poster, headers: ["If-None-Match": "\"x\", W/\(tag)"]).status == 304)
        #expect(try await server.get(poster, headers: ["If-None-Match": "\"other\""]).status == 200)
        // If-Range with this ETag: the range; with another (or a weak one, or a date): the whole file.
        let ranged = try await server.get(poster, headers: ["Range": "bytes=0-9", "If-Range": tag])
        #expect(ranged.status == 206 && ranged.body.count == 10)
        for validator in ["\"stale-1\"", "W/\(tag)", "Fri, 27 Nov 2026 00:00:00 GMT"] {
            let full = try await server.get(poster, headers: ["Range": "bytes=0-9", "If-Range": validator])
            #expect(full.status == 200 && full.body == whole.body, "\(validator)")
        }
    }
}
