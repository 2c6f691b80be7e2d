import Foundation
import Media
import TestSupport
import Testing

/// A listing's durations and segments come from what decodes: a fragmented MP4 whose header claims 143,165 s
/// (its duration fields all ones) is listed with the 2.5 s it holds, and a segment past the end is a 404 that says so.
@Suite struct DurationServeTests {
    @Test func aHeaderClaiming143165SecondsIsListedWithWhatDecodesAndEverySegmentPlays() async throws {
        let feed = try ServeFeeds.folder([TestFixtures.duration("frag_unknown_duration.mp4")])
        defer { try? FileManager.default.removeItem(at: feed) }
        let server = try await ServerHarness.start(ServeFeeds.loader(feed))
        defer { Task { await server.stop() } }
        let card = try #require(try await server.allCards().first)
        #expect(card["error"] == nil)
        // 75 frames at 30 fps, from 0.067 s (two frames of reordering delay) to 2.567 s.
        let duration = try #require(card["duration"] as? Double)
        #expect(abs(duration - 2.567) < 1.0 / 30, "\(duration) s")
        let renditions = try #require(card["renditions"] as? [[String: Any]])
        #expect(!renditions.isEmpty)
        for rendition in renditions {
            let segments = try #require(rendition["segments"] as? [String])
            let lengths = try #require(rendition["segment_durations"] as? [Double])
            #expect(segments.count == 2 && lengths.count == 2)
            #expect(abs(lengths.reduce(0, +) - duration) < 0.002)
            for segment in segments {
                #expect(try await server.get(segment).status == 200, "\(segment)")
            }
            // Past the end: 404 with the rendition's segment count, for the next index and a far one.
            for k in [segments.count, 71_583] {
                let url = segments[0].replacingOccurrences(of: "seg-0.m4s", with: "seg-\(k).m4s")
                let answer = try await server.get(url)
                #expect(answer.status == 404, "\(url)")
                #expect(answer.headers["x-segment-count"] == "2")
                #expect(answer.text.contains("past the end"))
            }
        }
        // An unknown file is a plain 404, without the header.
        let initURL = try #require(renditions[0]["init"] as? String)
        let unknown = try await server.get(initURL.replacingOccurrences(of: "init.mp4", with: "seg-x.m4s"))
        #expect(unknown.status == 404 && unknown.headers["x-segment-count"] == nil)
    }
}
