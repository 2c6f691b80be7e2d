import EngineSupport
import Feed
@testable import FeedServer
import Foundation
import Logging
import Media
import TestSupport
import Testing
import Transcode

/// `videofeed serve` over HTTP on loopback: the listing, media made on demand, HTTP semantics, bad input, and
/// identity with the batch.
@Suite(.serialized) struct FeedServerTests {
    static let files = [TestFixtures.media("h264_portrait.mp4"), TestFixtures.transcode("rotated_phone.mp4"),
                        TestFixtures.bad("truncated.mp4"), TestFixtures.media("animated.gif"),
                        TestFixtures.transcode("interlaced.ts")]

    @Test func listingPagesInCloudinaryShape() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder(Self.files)))
        defer { Task { await server.stop() } }
        let first = try await server.json("/api/feed?limit=2")
        let resources = try #require(first["resources"] as? [[String: Any]])
        #expect(resources.count == 2)
        // The cursor names the last item listed and its place (opaque to clients).
        #expect((first["next_cursor"] as? String)?.hasPrefix("2~") == true)
        #expect(resources[0]["index"] as? Int == 0)
        #expect((resources[0]["public_id"] as? String)?.hasSuffix("h264_portrait") == true)
        #expect(resources[0]["created_at"] is String)
        #expect(resources[0]["width"] as? Int == 720 && resources[0]["height"] as? Int == 1280)
        // The rotated phone clip is listed upright.
        #expect(resources[1]["width"] as? Int == 272 && resources[1]["height"] as? Int == 480)
        let renditions = try #require(resources[0]["renditions"] as? [[String: Any]])
        #expect(renditions.map { $0["name"] as? String } == ["720x1280", "540x960", "360x640"])
        let codecs = try #require(renditions[0]["codecs"] as? String)
        #expect(codecs.hasPrefix("avc1.64") && codecs.hasSuffix(",mp4a.40.2"))
        #expect(renditions[0]["mime"] as? String == "video/mp4; codecs=\"\(codecs)\"")
        #expect((renditions[0]["bandwidth"] as? Int ?? 0) > 0)
        // 2 s: a 1 s first segment and a 1 s second, listed with their lengths.
        #expect((renditions[0]["segments"] as? [String])?.count == 2)
        #expect((renditions[0]["segment_durations"] as? [Double]) == [1, 1])

        let all = try await server.allCards(limit: 2)
        #expect(all.map { $0["index"] as? Int } == [0, 1, 2, 3, 4])
        // The truncated file is a card with its error, naming it; the others play.
        let broken = all[2]
        #expect(broken["renditions"] == nil)
        #expect((broken["error"] as? String)?.contains("truncated") == true)
        #expect(all.filter { $0["error"] == nil }.count == 4)
        let last = try await server.json("/api/feed?limit=2&cursor=4")
        #expect(last["next_cursor"] == nil && last["total"] as? Int == 5)

        #expect(try await server.get("/api/feed?limit=0").status == 400)
        #expect(try await server.get("/api/feed?limit=51").status == 400)
        #expect(try await server.get("/api/feed?cursor=abc").status == 400)
        #expect(try await server.get("/api/feed?cursor=-1").status == 400)
        let past = try await server.json("/api/feed?cursor=99")
        #expect((past["resources"] as? [Any])?.isEmpty == true)
    }

    @Test func aListingThatAnswersAtOnceListsCardsNotMadeYetAsPendingWithTheirPosters() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder(Array(Self.files[0...1]))))
        defer { Task { await server.stop() } }
        // A cold server: no manifest is made, so both cards come back pending, at once, with no work started.
        let page = try await server.json("/api/feed?limit=2&pending=1")
        let pending = try #require(page["resources"] as? [[String: Any]])
        #expect(pending.map { $0["pending"] as? Bool } == [true, true])
        #expect(pending.map { $0["index"] as? Int } == [0, 1])
        #expect((pending[0]["public_id"] as? String)?.hasSuffix("h264_portrait") == true)
        #expect(pending[0]["created_at"] is String && pending[0]["renditions"] == nil)
        #expect(page["next_cursor"] == nil && page["total"] as? Int == 2)
        let manifests = { () -> Int in
            let names = FileManager.default.enumerator(atPath: server.cache.path)?.allObjects as? [String] ?? []
            return names.filter { $0.hasSuffix("manifest.json") }.count
        }
        #expect(manifests() == 0)
        // The poster is made from the source alone, without the manifest.
        let poster = try await server.get(try #require(pending[0]["poster"] as? String))
        #expect(poster.status == 200 && poster.headers["content-type"] == "image/jpeg")
        #expect(Array(poster.body.prefix(2)) == [0xFF, 0xD8])
        #expect(manifests() == 0)
        // The whole card, asked for alone (the page does this when it is about to play it), waits for its manifest.
        let one = try await server.json("/api/feed?cursor=1&limit=1")
        let card = try #require((one["resources"] as? [[String: Any]])?.first)
        #expect(card["pending"] == nil && card["index"] as? Int == 1)
        #expect((card["renditions"] as? [[String: Any]])?.isEmpty == false)
        #expect(manifests() == 1)
        // Once made, the same listing lists it whole.
        let again = try #require(try await server.json("/api/feed?limit=2&pending=1")["resources"] as? [[String: Any]])
        #expect(again.map { $0["pending"] as? Bool } == [true, nil])
    }

    @Test func mediaIsServedWithRangesETagsAndImmutableCaching() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.files[0]])))
        defer { Task { await server.stop() } }
        let card = try #require(try await server.allCards().first)
        let rendition = try #require((card["renditions"] as? [[String: Any]])?.first)
        let segment = try #require((rendition["segments"] as? [String])?.first)

        let whole = try await server.get(segment)
        #expect(whole.status == 200)
        #expect(whole.headers["content-type"] == "video/iso.segment")
        #expect(whole.headers["cache-control"] == "public, max-age=31536000, immutable")
        #expect(whole.headers["accept-ranges"] == "bytes")
        let etag = try #require(whole.headers["etag"])
        #expect(etag.hasPrefix("\"") && whole.body.count > 1000)
        // A CMAF media segment: sidx (or styp) then moof.
        #expect(["sidx", "styp", "moof"].map { Array($0.utf8) }.contains(Array(whole.body[4..<8])))

        let part = try await server.get(segment, headers: ["Range": "bytes=100-199"])
        #expect(part.status == 206 && part.body == Array(whole.body[100...199]))
        #expect(part.headers["content-range"] == "bytes 100-199/\(whole.body.count)")
        let tail = try await server.get(segment, headers: ["Range": "bytes=-10"])
        #expect(tail.status == 206 && tail.body == Array(whole.body.suffix(10)))
        let open = try await server.get(segment, headers: ["Range": "bytes=\(whole.body.count - 5)-"])
        #expect(open.status == 206 && open.body.count == 5)
        let beyond = try await server.get(segment, headers: ["Range": "bytes=\(whole.body.count)-"])
        #expect(beyond.status == 416 && beyond.headers["content-range"] == "bytes */\(whole.body.count)")
        let same = try await server.get(segment, headers: ["If-None-Match": etag])
        #expect(same.status == 304 && same.body.isEmpty)
        let head = try await server.get(segment, method: "HEAD")
        #expect(head.status == 200 && head.headers["content-length"] == String(whole.body.count))

        let initSegment = try await server.get(try #require(rendition["init"] as? String))
        #expect(initSegment.status == 200 && initSegment.headers["content-type"] == "video/mp4")
        #expect(Array(initSegment.body[4..<8]) == Array("ftyp".utf8))
        let poster = try await server.get(try #require(card["poster"] as? String))
        #expect(poster.status == 200 && poster.headers["content-type"] == "image/jpeg")
        #expect(Array(poster.body.prefix(2)) == [0xFF, 0xD8])
        let page = try await server.get("/")
        #expect(page.status == 200 && page.headers["content-type"]?.hasPrefix("text/html") == true)
        let metrics = try await server.get("/metrics")
        // Bodies sent: the whole segment and three ranges (not the 304, the 416 or the HEAD).
        #expect(metrics.text.contains("videofeed_segments_served_total 4"))
        #expect(metrics.text.contains("videofeed_segments_transcoded_total"))
        #expect(metrics.text.contains("videofeed_cache_bytes"))
    }

    @Test func nothingOutsideTheCacheIsReachable() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.files[0]])))
        defer { Task { await server.stop() } }
        let card = try #require(try await server.allCards().first)
        let poster = try #require(card["poster"] as? String)
        let folder = String(poster.dropFirst("/media/".count).dropLast("/poster.jpg".count))
        // A file planted in the cache beside the item's folder, and the source folder, must stay out of reach.
        try Data("secret".utf8).write(to: server.cache.appendingPathComponent("secret.txt"))
        for path in ["/media/\(folder)/../secret.txt", "/media/\(folder)/%2e%2e/secret.txt",
                     "/media/\(folder)%2Fposter.jpg", "/media/\(folder)/720x1280%2Fseg-0.m4s",
                     "/media/\(folder)/manifest.json", "/media/\(folder)/720x1280/seg-2.m4s",
                     "/media/\(folder)/720x1280/seg-00.m4s", "/media/\(folder)/4000x4000/seg-0.m4s",
                     "/media/\(folder)/../../../../etc/passwd", "/media/secret.txt", "/media//etc/passwd",
                     "/media/%00/poster.jpg", "/app/../Package.swift", "/app/%2e%2e/FeedServer.swift",
                     "/media/nothing.00000000/poster.jpg"] {
            let answer = try await server.get(path)
            #expect(answer.status == 404, "\(path) → \(answer.status)")
            #expect(!answer.text.contains("secret"), "\(path)")
        }
    }

    /// Initialisation segments (made by the manifest job from the first frames), media segments made alone on
    /// demand, and the files of a full run (MP4s, previews) are byte-identical to the batch's. The media segments
    /// are requested first, so that they are made on demand (`Transcoder.segments` with the manifest's origin)
    /// and not taken from a full run.
    @Test func servedFilesAreByteIdenticalToTheBatch() async throws {
        let root = try ServeFeeds.folder([Self.files[0], Self.files[1]])
        let server = try await ServerHarness.start(ServeFeeds.loader(root))
        defer { Task { await server.stop() } }
        let out = try TestFixtures.temporaryFolder("serve-batch")
        let items = try await DirectoryFeedLoader(root: root, order: .name).loadAll().items
        let summary = try TranscodeBatch(feed: items, configuration: .init(output: out)).run()
        #expect(summary.failures.isEmpty)
        var compared = 0
        let cards = try await server.allCards()
        // The manifests keep what their pass over each item's start learnt: seg-1 is made without that pass.
        let manifests = try FileManager.default.subpathsOfDirectory(atPath: server.cache.path)
            .filter { $0.hasSuffix("manifest.json") }
        #expect(manifests.count == 2)
        for file in manifests {
            let data = try Data(contentsOf: server.cache.appendingPathComponent(file))
            #expect(try JSONDecoder().decode(ItemManifest.self, from: data).origin != nil, "\(file)")
        }
        for card in cards {
            for rendition in card["renditions"] as? [[String: Any]] ?? [] {
                for path in (rendition["segments"] as? [String] ?? []).reversed()
                    + [rendition["init"] as? String, rendition["mp4"] as? String].compactMap({ $0 }) {
                    let served = try await server.get(path)
                    #expect(served.status == 200, "\(path)")
                    let relative = String(path.dropFirst("/media/".count)).removingPercentEncoding ?? ""
                    let batch = try Data(contentsOf: out.appendingPathComponent(relative))
                    let same = served.body == Array(batch)   // (not in the #expect: it would print both bodies)
                    #expect(same, "\(path) differs from the batch's: \(served.body.count) and \(batch.count) bytes")
                    compared += 1
                }
            }
            let preview = try await server.get(try #require(card["preview"] as? String))
            #expect(preview.status == 200)
        }
        // In the first rendition: the init, the MP4, seg-0 and seg-1 of h264_portrait (2 s: 1 s + 1 s); the same of
        // rotated_phone (2.5 s: 1 s + 1.5 s).
        #expect(compared >= 8)
    }

    @Test func aSourceThatDisappearsOrChangesIsGoneNotACrash() async throws {
        let root = try ServeFeeds.folder([Self.files[0], Self.files[1]])
        let server = try await ServerHarness.start(ServeFeeds.loader(root))
        defer { Task { await server.stop() } }
        let cards = try await server.allCards()
        let first = try #require((cards[0]["renditions"] as? [[String: Any]])?.first?["segments"] as? [String])
        let second = try #require((cards[1]["renditions"] as? [[String: Any]])?.first?["segments"] as? [String])
        // Removed before its segment was made.
        try FileManager.default.removeItem(at: root.appendingPathComponent("00-h264_portrait.mp4"))
        #expect(try await server.get(first[0]).status == 410)
        // Replaced by another file: the old URLs are gone, the new listing names a new version that plays.
        let path = root.appendingPathComponent("01-rotated_phone.mp4").path
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: TestFixtures.transcode("long_gop_b.mp4"), toPath: path)
        #expect(try await server.get(second[0]).status == 410)
        let fresh = try await server.json("/api/feed?limit=5")
        let renewed = try #require((fresh["resources"] as? [[String: Any]])?.first {
            ($0["public_id"] as? String)?.hasSuffix("rotated_phone") == true
        })
        let newSegment = try #require((renewed["renditions"] as? [[String: Any]])?.first?["segments"] as? [String])
        #expect(newSegment[0] != second[0])
        #expect(try await server.get(newSegment[0]).status == 200)
        #expect(try await server.get("/healthz").text == "ok\n")
    }

    /// At debug level the engine logs each job's end: what it made, how long it queued and ran, and whether a
    /// request or prefetch wanted it. At info level it logs none.
    @Test func eachJobIsLoggedAtDebugLevel() async throws {
        let root = try ServeFeeds.folder([Self.files[0]])
        for level in [Logger.Level.debug, .info] {
            let lines = Locked<[String]>([])
            var logger = Logger(label: "videofeed.serve.test") { _ in CapturingLogHandler(lines: lines) }
            logger.logLevel = level
            let engine = try ServeEngine(feed: Feed(loader: ServeFeeds.loader(root)),
                                         configuration: .init(cache: try TestFixtures.temporaryFolder("serve-log")),
                                         logger: logger)
            defer { engine.shutdown() }
            let entry = try #require(try await engine.catalog.entry(at: 0))
            _ = try await engine.manifest(for: entry)
            let jobs = lines.get().filter { $0.hasPrefix("job ") }
            if level == .debug {
                #expect(jobs.count == 1)
                let line = try #require(jobs.first)
                #expect(line.hasPrefix("job \(entry.folder) manifest made: queued "))
                #expect(line.contains("s ran ") && line.hasSuffix("s request"))
            } else {
                #expect(jobs.isEmpty)
            }
        }
    }

    /// The engine's configuration reaches its work pool: the workers and the hold on requests asked after a waiting
    /// wide one (the pool's own tests cover what the hold does).
    @Test func theConfigurationReachesTheWorkPool() throws {
        let root = try ServeFeeds.folder([Self.files[0]])
        var configuration = ServeEngine.Configuration(cache: try TestFixtures.temporaryFolder("serve-pool"))
        for (workers, hold) in [(1, 0.25), (3, 0.0)] {
            configuration.workers = workers
            configuration.holdLimit = hold
            let engine = try ServeEngine(feed: Feed(loader: ServeFeeds.loader(root)), configuration: configuration)
            defer { engine.shutdown() }
            #expect(engine.pool.workers == workers)
            #expect(engine.pool.holdLimit == hold)
        }
    }

    /// The engine keeps a source path and a manifest per current item version only: a replaced source's old version
    /// is forgotten, so the maps do not grow by one entry per upload.
    @Test func aRetiredVersionsManifestAndSourceAreForgotten() async throws {
        let root = try ServeFeeds.folder([Self.files[0]])
        let engine = try ServeEngine(feed: Feed(loader: ServeFeeds.loader(root)),
                                     configuration: .init(cache: try TestFixtures.temporaryFolder("serve-retire")))
        defer { engine.shutdown() }
        let first = try #require(try await engine.catalog.entry(at: 0))
        _ = try await engine.manifest(for: first)
        #expect(engine.itemsHeld.sources == 1 && engine.itemsHeld.manifests == 1)
        // The source is replaced twice: each time the next listing names a new version and retires the old one.
        for replacement in [TestFixtures.transcode("long_gop_b.mp4"), Self.files[1]] {
            let path = root.appendingPathComponent("00-h264_portrait.mp4").path
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.copyItem(atPath: replacement, toPath: path)
            let entry = try #require(try await engine.catalog.entry(at: 0))
            _ = try await engine.manifest(for: entry)
            #expect(engine.itemsHeld.sources == 1 && engine.itemsHeld.manifests == 1)
            #expect(engine.knownManifest(first.folder) == nil)
        }
        guard case .retired = await engine.catalog.lookup(folder: first.folder) else {
            Issue.record("the first version is not retired")
            return
        }
        // The catalog remembers a bounded number of retired versions: past it, the oldest answers as never listed.
        let catalog = ServedCatalog(feed: Feed(loader: ServeFeeds.loader(root)), settings: TranscodeSettings(),
                                    onEntry: { _ in }, retiredLimit: 1)
        let a = try #require(try await catalog.entry(at: 0))
        var versions = [a.folder]
        for replacement in [TestFixtures.transcode("long_gop_b.mp4"), Self.files[0]] {
            let path = root.appendingPathComponent("00-h264_portrait.mp4").path
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.copyItem(atPath: replacement, toPath: path)
            versions.append(try #require(try await catalog.entry(at: 0)).folder)
        }
        var states: [String] = []
        for folder in versions {
            switch await catalog.lookup(folder: folder) {
            case .current: states.append("current")
            case .retired: states.append("retired")
            case .unknown: states.append("unknown")
            }
        }
        #expect(states == ["unknown", "retired", "current"])
    }

    /// A card listed whole has every rendition's first segment made with its manifest, in the same job: the first
    /// segments are answered from the cache with no job of their own, and are counted as segments made.
    @Test func theManifestJobMakesEveryFirstSegment() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.files[0]])))
        defer { Task { await server.stop() } }
        func metric(_ name: String) async throws -> Double {
            let text = try await server.get("/metrics").text
            let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            return try #require(line.flatMap { Double($0.split(separator: " ")[1]) })
        }
        let card = try #require(try await server.allCards().first)
        let renditions = try #require(card["renditions"] as? [[String: Any]])
        #expect(renditions.count == 3)
        for rendition in renditions {
            let first = try #require((rendition["segments"] as? [String])?.first)
            #expect(server.engine.cache.contains(String(first.dropFirst("/media/".count))), "\(first)")
            let answer = try await server.get(first)
            #expect(answer.status == 200 && answer.body.count > 1000)
        }
        #expect(try await metric("videofeed_media_waits_total") == 0)
        #expect(try await metric("videofeed_segments_transcoded_total") == 3)
    }

    /// A file already in the cache is answered from it at once — no work task, no hang-up watch — while the item's
    /// source is still checked: once it is removed, the cached file answers 410.
    @Test func aCachedFileIsServedAtOnceAndItsSourceIsStillChecked() async throws {
        let root = try ServeFeeds.folder([Self.files[0]])
        let server = try await ServerHarness.start(ServeFeeds.loader(root))
        defer { Task { await server.stop() } }
        func waits() async throws -> Double {
            let text = try await server.get("/metrics").text
            let line = text.split(separator: "\n").first { $0.hasPrefix("videofeed_media_waits_total ") }
            return try #require(line.flatMap { Double($0.split(separator: " ")[1]) })
        }
        let card = try #require(try await server.allCards().first)
        // Segment 1: the manifest job, which listing the card ran, made the first segments.
        let segment = try #require((card["renditions"] as? [[String: Any]])?.first?["segments"] as? [String])[1]
        let made = try await server.get(segment)
        #expect(made.status == 200)
        let waited = try await waits()
        #expect(waited == 1)
        // Cached: the whole file and a range, answered without waiting.
        let again = try await server.get(segment)
        #expect(again.status == 200 && again.body == made.body)
        let part = try await server.get(segment, headers: ["Range": "bytes=0-99"])
        #expect(part.status == 206 && part.body == Array(made.body.prefix(100)))
        #expect(try await waits() == waited)
        // A file the item does not have is still 404; a removed source still 410, though its file is cached.
        let folder = String(segment.dropFirst("/media/".count)).split(separator: "/")[0]
        #expect(try await server.get("/media/\(folder)/720x1280/seg-7.m4s").status == 404)
        try FileManager.default.removeItem(at: root.appendingPathComponent("00-h264_portrait.mp4"))
        #expect(server.engine.cache.contains(String(segment.dropFirst("/media/".count))))
        #expect(try await server.get(segment).status == 410)
    }

    @Test func hostileUploadsAreRefusedAsInTheBatch() async throws {
        // A playlist that names a local file, uploaded as .mp4, and random bytes.
        let root = try TestFixtures.temporaryFolder("serve-hostile")
        try FileManager.default.copyItem(atPath: TestFixtures.folder.appendingPathComponent("hostile/local_read.m3u8").path,
                                         toPath: root.appendingPathComponent("a-playlist.mp4").path)
        try FileManager.default.copyItem(atPath: TestFixtures.bad("random.mp4"),
                                         toPath: root.appendingPathComponent("b-random.mp4").path)
        try FileManager.default.copyItem(atPath: Self.files[0], toPath: root.appendingPathComponent("c-good.mp4").path)
        let server = try await ServerHarness.start(ServeFeeds.loader(root))
        defer { Task { await server.stop() } }
        let cards = try await server.allCards()
        #expect(cards.count == 3)
        #expect(cards[0]["error"] is String && cards[1]["error"] is String)
        #expect(cards[2]["error"] == nil)
        let secret = try String(contentsOfFile: TestFixtures.folder.appendingPathComponent("hostile/secret.txt").path,
                                encoding: .utf8)
        let listing = try await server.get("/api/feed")
        #expect(!listing.text.contains(secret.trimmingCharacters(in: .whitespacesAndNewlines)))
    }
}

/// A log handler that keeps each message (for tests of what is logged).
struct CapturingLogHandler: LogHandler {
    let lines: Locked<[String]>
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append(event.message.description) }
    }
}
