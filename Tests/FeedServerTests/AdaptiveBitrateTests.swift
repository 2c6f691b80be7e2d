import Feed
@testable import FeedServer
import Foundation
import Media
import Prefetch
import TestSupport
import Testing
import Transcode

/// The server's half of adaptive bitrate (issue 34): a viewer's `hello` says what its network affords, and the
/// segments made ahead for it are of the rung the page will ask for, by the page's own rule.
@Suite(.serialized) struct AdaptiveBitrateTests {
    /// A plan with the default ladder's three rungs at their VBV caps.
    static func manifest() throws -> ItemManifest {
        // The plan as a manifest file stores it (TranscodePlan has no memberwise initialiser).
        let json = #"""
        {"plan": {"renditions": [{"name": "720x1280", "width": 720, "height": 1280, "maxBitrate": 3041280},
                                 {"name": "540x960", "width": 540, "height": 960, "maxBitrate": 1710720},
                                 {"name": "360x640", "width": 360, "height": 640, "maxBitrate": 760320}],
                  "displayWidth": 1080, "displayHeight": 1920, "hasAudio": true, "isStill": false, "duration": 4,
                  "segmentSeconds": 2, "firstSegmentSeconds": 1, "videoStream": 0, "audioStream": 1},
         "codecs": ["avc1.64001f,mp4a.40.2", "avc1.64001f,mp4a.40.2", "avc1.64001e,mp4a.40.2"]}
        """#
        return try JSONDecoder().decode(ItemManifest.self, from: Data(json.utf8))
    }

    @Test func theRungIsTheBoxsOrTheLargestBelowItThatTheBandwidthCarries() throws {
        let m = try Self.manifest()
        let audio = 128_000
        // No bandwidth said: the box alone (810x1440 is larger than every rung: the largest).
        #expect(m.rendition(forBox: 810, 1440, within: nil, audio: audio) == 0)
        // The rung's peak rate is its cap plus the audio.
        #expect(m.rendition(forBox: 810, 1440, within: 3_041_280 + audio, audio: audio) == 0)
        #expect(m.rendition(forBox: 810, 1440, within: 3_041_280 + audio - 1, audio: audio) == 1)
        #expect(m.rendition(forBox: 810, 1440, within: 1_200_000, audio: audio) == 2)
        // Less than the smallest rung needs: the smallest all the same.
        #expect(m.rendition(forBox: 810, 1440, within: 100_000, audio: audio) == 2)
        // Never above the box's rung, however fast the network.
        #expect(m.rendition(forBox: 540, 960, within: 50_000_000, audio: audio) == 1)
        #expect(m.rendition(forBox: 300, 500, within: 50_000_000, audio: audio) == 2)
    }

    @Test func helloCarriesABoundedBandwidth() {
        #expect(ViewerMessage.parse(#"{"type":"hello","width":810,"height":1440,"bandwidth":888320}"#)
                == .hello(width: 810, height: 1440, rendition: nil, bandwidth: 888_320))
        #expect(ViewerMessage.parse(#"{"type":"hello","width":810,"height":1440,"bandwidth":null}"#)
                == .hello(width: 810, height: 1440, rendition: nil, bandwidth: nil))
        for bad in [#"{"type":"hello","bandwidth":0}"#, #"{"type":"hello","bandwidth":-5}"#,
                    #"{"type":"hello","bandwidth":1e11}"#, #"{"type":"hello","bandwidth":"fast"}"#] {
            #expect(ViewerMessage.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func segmentsMadeAheadAreOfTheRungTheViewersNetworkAffords() async throws {
        let clip = TestFixtures.media("h264_portrait.mp4")
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([clip, clip])),
                                                   policy: WindowPolicy(behind: 0, ahead: 1))
        defer { Task { await server.stop() } }
        let cards = try await server.allCards(limit: 2)
        let renditions = try #require(cards.first?["renditions"] as? [[String: Any]])
        #expect(renditions.map { $0["name"] as? String } == ["720x1280", "540x960", "360x640"])
        // The card's bandwidth is the rung's peak: its cap and the audio.
        let smallest = try #require(renditions.last?["bandwidth"] as? Int)
        let folder = String((try #require(cards.first?["poster"] as? String)).dropFirst("/media/".count)
            .dropLast("/poster.jpg".count))
        let hub = ViewerHub(engine: server.engine, policy: WindowPolicy(behind: 0, ahead: 1))
        let viewer = hub.connect()
        defer { hub.disconnect(viewer) }
        // A phone-sized box (the 720x1280 rung) on a network that carries only the smallest rung.
        hub.hello(viewer, width: 810, height: 1440, rendition: nil, bandwidth: smallest)
        _ = await hub.move(viewer, to: 0, time: 0.5)
        let large = JobKey(folder: folder, artifact: .segment(rendition: 0, index: 1))
        var made = false
        for _ in 0..<600 where !made {
            made = server.engine.cache.contains("\(folder)/360x640/seg-1.m4s")
            if !made { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(made, "the affordable rung's next segment was not made ahead")
        #expect(server.engine.pool.state(of: large) == nil && !server.engine.cache.contains("\(folder)/720x1280/seg-1.m4s"))
        // The network got faster: the box's rung again.
        hub.hello(viewer, width: 810, height: 1440, rendition: nil, bandwidth: nil)
        _ = await hub.move(viewer, to: 0, time: 0.5)
        made = false
        for _ in 0..<600 where !made {
            made = server.engine.cache.contains("\(folder)/720x1280/seg-1.m4s")
            if !made { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(made, "the box's rung was not made ahead once the network allowed it")
    }
}
