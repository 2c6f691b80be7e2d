import Feed
@testable import FeedServer
import Foundation
import Media
import Prefetch
import TestSupport
import Testing
import Transcode

/// `serve --codecs h264,av1` (issue 37): the card and the master playlist list the AV1 set beside the H.264 ladder,
/// a cold item's listing makes the ladder alone, and AV1 segments are made for the viewers that play AV1.
@Suite(.serialized) struct ServeAV1Tests {
    static func settings() -> TranscodeSettings {
        var settings = TranscodeSettings()
        settings.codecs = [.h264, .av1]
        return settings
    }

    /// A manifest of the default ladder and its AV1 set.
    static func manifest() throws -> ItemManifest {
        let json = #"""
        {"plan": {"renditions": [{"name": "720x1280", "width": 720, "height": 1280, "maxBitrate": 3041280},
                                 {"name": "540x960", "width": 540, "height": 960, "maxBitrate": 1710720},
                                 {"name": "360x640", "width": 360, "height": 640, "maxBitrate": 760320},
                                 {"name": "720x1280-av1", "width": 720, "height": 1280, "maxBitrate": 3041280, "codec": "av1"},
                                 {"name": "540x960-av1", "width": 540, "height": 960, "maxBitrate": 1710720, "codec": "av1"},
                                 {"name": "360x640-av1", "width": 360, "height": 640, "maxBitrate": 760320, "codec": "av1"}],
                  "displayWidth": 1080, "displayHeight": 1920, "hasAudio": true, "isStill": false, "duration": 4,
                  "segmentSeconds": 2, "firstSegmentSeconds": 1, "videoStream": 0, "audioStream": 1},
         "codecs": ["avc1.64001f,mp4a.40.2", "avc1.64001f,mp4a.40.2", "avc1.64001e,mp4a.40.2",
                    "av01.0.05M.08,mp4a.40.2", "av01.0.04M.08,mp4a.40.2", "av01.0.01M.08,mp4a.40.2"]}
        """#
        return try JSONDecoder().decode(ItemManifest.self, from: Data(json.utf8))
    }

    @Test func aViewerChoosesAmongItsCodecsRenditionsByThePagesRule() throws {
        let m = try Self.manifest()
        let audio = 128_000
        #expect(m.ladder == [0, 1, 2])
        #expect(m.renditions(playing: .av1) == [3, 4, 5])
        #expect(m.rendition(forBox: 810, 1440) == 0)
        #expect(m.rendition(forBox: 810, 1440, codec: .av1) == 3)
        #expect(m.rendition(forBox: 540, 960, codec: .av1) == 4)
        #expect(m.rendition(forBox: 810, 1440, within: 1_200_000, audio: audio, codec: .av1) == 5)
        #expect(m.rendition(forBox: 810, 1440, within: 100_000, audio: audio, codec: .av1) == 5)
        #expect(m.rendition(forBox: 810, 1440, within: 3_041_280 + audio - 1, audio: audio, codec: .av1) == 4)
        // An item without the AV1 set: its ladder, for an AV1 viewer too.
        var h264 = m
        h264.plan.renditions.removeLast(3)
        h264.codecs.removeLast(3)
        #expect(h264.rendition(forBox: 810, 1440, codec: .av1) == 0)
        #expect(h264.rendition(forBox: 300, 500, within: 50_000_000, audio: audio, codec: .av1) == 2)
    }

    @Test func helloSaysTheCodec() {
        #expect(ViewerMessage.parse(#"{"type":"hello","width":810,"height":1440,"codec":"av1"}"#)
                == .hello(width: 810, height: 1440, rendition: nil, bandwidth: nil, codec: .av1))
        #expect(ViewerMessage.parse(#"{"type":"hello","width":810,"height":1440,"codec":null}"#)
                == .hello(width: 810, height: 1440, rendition: nil, bandwidth: nil, codec: nil))
        #expect(ViewerMessage.parse(#"{"type":"at","index":3,"time":1.5,"codec":"h264"}"#)
                == .at(index: 3, item: nil, time: 1.5, codec: .h264))
        #expect(ViewerMessage.parse(#"{"type":"at","index":3,"time":1.5}"#) == .at(index: 3, item: nil, time: 1.5))
        for bad in [#"{"type":"hello","codec":"hevc"}"#, #"{"type":"hello","codec":5}"#, #"{"type":"hello","codec":""}"#,
                    #"{"type":"at","index":3,"time":1,"codec":"vp9"}"#] {
            #expect(ViewerMessage.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func aColdListingMakesTheLadderAndListsTheAV1SetWithItsEncodersCodecs() async throws {
        let clip = TestFixtures.media("h264_portrait.mp4")
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([clip])),
                                                   settings: Self.settings())
        defer { Task { await server.stop() } }
        let card = try #require(try await server.allCards(limit: 1).first)
        let renditions = try #require(card["renditions"] as? [[String: Any]])
        #expect(renditions.map { $0["name"] as? String }
                == ["720x1280", "540x960", "360x640", "720x1280-av1", "540x960-av1", "360x640-av1"])
        #expect(renditions.map { $0["codec"] as? String } == ["h264", "h264", "h264", "av1", "av1", "av1"])
        // Not made yet: a page showing the card at once plays the ladder.
        #expect(renditions.map { $0["ready"] as? Bool } == [nil, nil, nil, false, false, false])
        let poster = try #require(card["poster"] as? String)
        let folder = String(poster.dropFirst("/media/".count).dropLast("/poster.jpg".count))
        // The listing made the ladder's first segments, and no AV1.
        for name in ["720x1280", "540x960", "360x640"] {
            #expect(server.engine.cache.contains("\(folder)/\(name)/seg-0.m4s"), "\(name)")
        }
        for name in ["720x1280-av1", "540x960-av1", "360x640-av1"] {
            #expect(!server.engine.cache.contains("\(folder)/\(name)/init.mp4"), "\(name)")
            #expect(!server.engine.cache.contains("\(folder)/\(name)/seg-0.m4s"), "\(name)")
        }
        // Asked for, an AV1 rendition's files are made: the same bytes as the batch's routine makes, with the codecs
        // string the card listed.
        let transcoder = try Transcoder(file: MediaFile(path: clip), settings: Self.settings())
        for (r, rendition) in renditions.enumerated() where rendition["codec"] as? String == "av1" {
            let initialization = try await server.get(try #require(rendition["init"] as? String))
            let segments = try #require(rendition["segments"] as? [String])
            let second = try await server.get(segments[1])
            let first = try await server.get(segments[0])
            #expect(initialization.status == 200 && first.status == 200 && second.status == 200)
            let made = try transcoder.initializationSegment(rendition: r)
            #expect(initialization.body == made.bytes, "\(r)")
            #expect(rendition["codecs"] as? String == made.codecs)
            #expect(rendition["mime"] as? String == "video/mp4; codecs=\"\(made.codecs)\"")
            #expect(first.body == (try transcoder.segments(0, renditions: [r])[0]).media)
            #expect(second.body == (try transcoder.segments(1, renditions: [r])[0]).media)
        }
        let again = try #require(try await server.allCards(limit: 1).first?["renditions"] as? [[String: Any]])
        #expect(again.map { $0["ready"] as? Bool } == [nil, nil, nil, true, true, true])
        let master = try await server.get("/media/\(folder)/master.m3u8")
        #expect(master.status == 200 && master.text.contains("720x1280-av1/index.m3u8"))
        #expect(master.text.contains("CODECS=\"\(renditions[3]["codecs"] as? String ?? "-")\""))
    }

    @Test func aViewerThatPlaysAV1HasAV1MadeAheadAndAnH264ViewerNone() async throws {
        let clip = TestFixtures.transcode("long_gop_b.mp4")
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([clip, clip])),
                                                   settings: Self.settings(),
                                                   policy: WindowPolicy(behind: 0, ahead: 1))
        defer { Task { await server.stop() } }
        let cards = try await server.allCards(limit: 2)
        let folders = try cards.map { card in
            String((try #require(card["poster"] as? String)).dropFirst("/media/".count).dropLast("/poster.jpg".count))
        }
        let engine = server.engine, cache = server.engine.cache
        func waitFor(_ keys: [String]) async throws -> Bool {
            for _ in 0..<900 {
                if keys.allSatisfy(cache.contains) { return true }
                try await Task.sleep(for: .milliseconds(100))
            }
            return false
        }
        // Whether segment `k` of rendition `r` of item `item` is wanted or made (a job known to the pool, or the file).
        func asked(_ item: Int, _ r: Int, _ k: Int) -> Bool {
            let name = r < 3 ? ["720x1280", "540x960", "360x640"][r] : ["720x1280", "540x960", "360x640"][r - 3] + "-av1"
            return engine.pool.state(of: JobKey(folder: folders[item], artifact: .segment(rendition: r, index: k))) != nil
                || cache.contains("\(folders[item])/\(name)/seg-\(k).m4s")
        }
        let hub = ViewerHub(engine: engine, policy: WindowPolicy(behind: 0, ahead: 1))
        // An H.264 viewer: the ladder's next segments, no AV1 asked for.
        let plain = hub.connect()
        hub.hello(plain, width: 810, height: 1440, rendition: nil)
        _ = await hub.move(plain, to: 0, time: 0.5)
        #expect(asked(0, 0, 1) && !asked(0, 3, 0) && !asked(0, 3, 1) && !asked(1, 3, 0))
        #expect(try await waitFor(["\(folders[0])/720x1280/seg-1.m4s"]), "the H.264 viewer's next segment was not made")
        #expect(!asked(0, 3, 0) && !asked(0, 3, 1) && !asked(1, 3, 0))
        hub.disconnect(plain)
        // An AV1 viewer whose card on screen plays the ladder (shown before its AV1 set was made): the ladder for
        // that card, the AV1 set for the next item; kept while it stays on that item.
        let viewer = hub.connect()
        defer { hub.disconnect(viewer) }
        hub.hello(viewer, width: 810, height: 1440, rendition: nil, codec: .av1)
        _ = await hub.move(viewer, to: 0, time: 0.5, playing: .h264)
        #expect(!asked(0, 3, 0) && !asked(0, 3, 1) && asked(1, 3, 0))
        _ = await hub.move(viewer, to: 0, time: 1.2)
        #expect(!asked(0, 3, 0) && !asked(0, 3, 1) && asked(0, 0, 1) && asked(1, 3, 0))
        #expect(try await waitFor(["\(folders[1])/720x1280-av1/seg-0.m4s"]), "the next item's AV1 was not made ahead")
        #expect(!asked(1, 4, 0) && !asked(1, 5, 0))
        // Its card plays AV1: that card's next segments are AV1 too.
        _ = await hub.move(viewer, to: 0, time: 0.5, playing: .av1)
        #expect(asked(0, 3, 1))
        #expect(try await waitFor(["\(folders[0])/720x1280-av1/seg-1.m4s"]), "the card's AV1 was not made ahead")
        // A move to another item forgets what the last card played: the viewer's own codec again.
        _ = await hub.move(viewer, to: 1, time: 0.5)
        #expect(asked(1, 3, 1) && !asked(1, 0, 1))
    }
}
