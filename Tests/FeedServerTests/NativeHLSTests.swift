import Feed
@testable import FeedServer
import Foundation
import Media
import Prefetch
import TestSupport
import Testing
import Transcode

/// HLS for native players (issue 34): the playlists come from the manifest as soon as it exists — no full run —
/// list the segments the page gets, and a player that read a media playlist has its next segments made ahead.
@Suite(.serialized) struct NativeHLSTests {
    @Test func playlistsComeFromTheManifestAloneAndListWhatThePageGets() async throws {
        let root = try ServeFeeds.folder([TestFixtures.media("h264_portrait.mp4")])
        let server = try await ServerHarness.start(ServeFeeds.loader(root))
        defer { Task { await server.stop() } }
        // Listed before anything is made: the pending card names the master playlist.
        let pending = try #require(try await server.allCards(pending: true).first)
        #expect(pending["pending"] as? Bool == true)
        let hls = try #require(pending["hls"] as? String)
        #expect(hls.hasSuffix("/master.m3u8"))
        let folder = String(hls.dropFirst("/media/".count).dropLast("/master.m3u8".count))

        let master = try await server.get(hls)
        #expect(master.status == 200)
        #expect(master.headers["content-type"] == "application/vnd.apple.mpegurl")
        let text = String(decoding: master.body, as: UTF8.self)
        // No full run: neither a fast-start MP4 nor a later segment is in the cache, and no full job was asked.
        #expect(!server.engine.cache.contains(folder + "/720x1280.mp4"))
        #expect(server.engine.pool.state(of: JobKey(folder: folder, artifact: .full)) == nil)

        let card = try #require(try await server.allCards().first)
        let renditions = try #require(card["renditions"] as? [[String: Any]])
        #expect(card["hls"] as? String == hls)
        let variants = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect(variants == renditions.map { "\($0["name"] as! String)/index.m3u8" })
        for r in renditions {
            let codecs = r["codecs"] as! String, name = r["name"] as! String
            #expect(text.contains("RESOLUTION=\(r["width"] as! Int)x\(r["height"] as! Int),CODECS=\"\(codecs)\""))
            let media = try await server.get("/media/\(folder)/\(name)/index.m3u8")
            #expect(media.status == 200)
            let lines = String(decoding: media.body, as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(lines.contains("#EXT-X-MAP:URI=\"init.mp4\"") && lines.last == "#EXT-X-ENDLIST")
            let uris = lines.filter { !$0.hasPrefix("#") }
            let durations = lines.filter { $0.hasPrefix("#EXTINF:") }.map { Double($0.dropFirst(8).dropLast())! }
            // The same segments and lengths as the card the page reads.
            #expect(uris.map { "/media/\(folder)/\(name)/" + $0 } == r["segments"] as! [String])
            #expect(durations == r["segment_durations"] as! [Double])
            for uri in ["init.mp4"] + uris {
                #expect(try await server.get("/media/\(folder)/\(name)/\(uri)").status == 200)
            }
        }
        #expect(!server.engine.cache.contains(folder + "/720x1280.mp4"))
        // HEAD and a range of a playlist, as for any file.
        let head = try await server.get(hls, method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(try await server.get(hls, headers: ["Range": "bytes=0-6"]).body == Array("#EXTM3U".utf8))
    }

    @Test func aPlayerThatReadAMediaPlaylistHasItsNextSegmentsMadeAhead() async throws {
        // 5.2 s: segments 0 (1 s), 1, 2 (2 s each) and 3.
        let root = try ServeFeeds.folder([TestFixtures.transcode("long_gop_b.mp4")])
        let server = try await ServerHarness.start(ServeFeeds.loader(root))
        defer { Task { await server.stop() } }
        let cards = try await server.allCards(pending: true)
        let card = try #require(cards.first)
        let hls = try #require(card["hls"] as? String)
        let folder = String(hls.dropFirst("/media/".count).dropLast("/master.m3u8".count))
        let master = String(decoding: try await server.get(hls).body, as: UTF8.self)
        let name = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") }).split(separator: "/")[0]
        // The page's requests (no media playlist read) make nothing ahead (decided before the answer is sent).
        #expect(try await server.get("/media/\(folder)/\(name)/seg-0.m4s").status == 200)
        #expect(server.engine.pool.state(of: JobKey(folder: folder, artifact: .segment(rendition: 0, index: 1))) == nil)
        #expect(!server.engine.cache.contains("\(folder)/\(name)/seg-1.m4s"))
        // A native player: the media playlist, then segment 0; segments 1 and 2 come without being asked for.
        #expect(try await server.get("/media/\(folder)/\(name)/index.m3u8").status == 200)
        #expect(try await server.get("/media/\(folder)/\(name)/seg-0.m4s").status == 200)
        for k in 1...2 {
            var made = false
            // Waits for the event with a bound that fails the test (a job takes well under a second here).
            for _ in 0..<600 where !made {
                made = server.engine.cache.contains("\(folder)/\(name)/seg-\(k).m4s")
                if !made { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(made, "segment \(k) was not made ahead")
        }
        // Two ahead, not more: segment 3 waits for the player to ask for segment 1 or 2.
        #expect(!server.engine.cache.contains("\(folder)/\(name)/seg-3.m4s"))
        #expect(server.engine.pool.state(of: JobKey(folder: folder, artifact: .segment(rendition: 0, index: 3))) == nil)
    }

    @Test func aPlayerThatReadsEveryVariantGetsTheirSecondSegmentsFromOnePass() async throws {
        let root = try ServeFeeds.folder([TestFixtures.transcode("long_gop_b.mp4")])
        let server = try await ServerHarness.start(ServeFeeds.loader(root))
        defer { Task { await server.stop() } }
        let card = try #require(try await server.allCards(pending: true).first)
        let hls = try #require(card["hls"] as? String)
        let folder = String(hls.dropFirst("/media/".count).dropLast("/master.m3u8".count))
        let master = String(decoding: try await server.get(hls).body, as: UTF8.self)
        let playlists = master.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect(playlists.count == 3)
        // One variant read: its own second segment, alone.
        #expect(try await server.get("/media/\(folder)/\(playlists[0])").status == 200)
        #expect(server.engine.pool.state(of: JobKey(folder: folder, artifact: .segments(index: 1))) == nil)
        // A second variant read (ffmpeg's demuxer reads them all): one pass for every rendition's second segment.
        #expect(try await server.get("/media/\(folder)/\(playlists[1])").status == 200)
        let names = playlists.map { String($0.split(separator: "/")[0]) }
        var made = false
        for _ in 0..<600 where !made {
            made = names.allSatisfy { server.engine.cache.contains("\(folder)/\($0)/seg-1.m4s") }
            if !made { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(made, "every rendition's second segment was not made ahead")
        // Each is what the page would get alone: byte-identical to a segment made for one rendition.
        let file = try MediaFile(path: TestFixtures.transcode("long_gop_b.mp4"))
        let transcoder = try Transcoder(file: file, settings: TranscodeSettings())
        for (r, name) in names.enumerated() {
            let alone = try transcoder.segments(1, renditions: [r])[0]
            let served = try await server.get("/media/\(folder)/\(name)/seg-1.m4s")
            #expect(served.body == alone.media, "\(name)/seg-1.m4s differs from the segment made alone")
        }
    }
}
