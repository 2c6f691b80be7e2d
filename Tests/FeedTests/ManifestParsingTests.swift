import Foundation
import Testing
@testable import Feed

@Suite("Native manifest")
struct ManifestParsingTests {
    let base = URL(fileURLWithPath: "/feeds/local/", isDirectory: true)

    @Test("JSON array: valid entries, relative URLs against the manifest folder, odd entries reported")
    func jsonArray() throws {
        let parser = FeedDocumentParser(baseURL: base)
        let document = try parser.parse(Samples.data("manifest.json"))
        #expect(document.format == .manifest)
        #expect(document.items.map(\.publicID) == ["fixtures/h264_portrait", "trips/lisbon/tram_28", "sub/zoneless"])
        try #require(document.items.count == 3)

        let first = document.items[0]
        #expect(first.source == URL(fileURLWithPath: "/feeds/local/media/h264_portrait.mp4"))
        #expect(first.createdAt == iso("2026-11-01T10:00:00Z"))
        #expect(first.format == "mp4" && first.bytes == 1234 && first.width == 720 && first.height == 1280)
        #expect(first.duration == 2.0)

        let second = document.items[1]
        #expect(second.source.absoluteString == "https://cdn.example.com/trips/lisbon/tram_28.webm")
        #expect(second.createdAt == iso("2026-11-02T08:30:00.250Z"))
        #expect(second.width == 1080 && second.format == "webm" && second.etag == "\"abc123\"")
        #expect(second.updatedAt == iso("2026-11-03T07:00:00Z"))

        #expect(document.items[2].source == URL(fileURLWithPath: "/feeds/elsewhere/zoneless.mov"))
        #expect(document.items[2].createdAt == iso("2026-11-04T12:00:00Z"))
        #expect(document.items[2].duration == nil)

        let reasons = Dictionary(uniqueKeysWithValues: document.skipped.map { ($0.index!, $0) })
        #expect(document.skipped.count == 6)
        #expect(reasons[2]?.reason == "missing \"url\"" && reasons[2]?.id == "no_url")
        #expect(reasons[3]?.reason == "\"created_at\" \"yesterday\" is not a date")
        #expect(reasons[4]?.reason == "duplicate public_id, first at entry 0")
        #expect(reasons[5]?.reason == "not an object but a string")
        #expect(reasons[6]?.reason == "\"bytes\" -5 is negative")
        #expect(reasons[7]?.reason.contains("not a file or http(s) URL") == true)
    }

    @Test("JSON Lines: blank lines ignored, a broken line reported by line number")
    func jsonLines() throws {
        let document = try FeedDocumentParser(baseURL: base).parse(Samples.data("manifest.jsonl"))
        #expect(document.format == .manifest)
        #expect(document.items.map(\.publicID) == ["lines/first", "lines/second"])
        try #require(document.items.count == 2 && document.skipped.count == 3)
        #expect(document.items[1].createdAt == iso("2026-11-02T10:00:00.500Z"))
        #expect(document.items[1].duration == 3.25)
        #expect(document.skipped.map(\.index) == [3, 4, 5])
        #expect(document.skipped[0].reason == "line 4 is not valid JSON")
        #expect(document.skipped[1].reason == "duplicate public_id, first at entry 0")
        #expect(document.skipped[2].reason == "missing \"public_id\"")
    }

    @Test("a relative URL without a document location is reported, not guessed")
    func relativeWithoutBase() throws {
        let json = #"[{"public_id": "a", "created_at": "2026-11-01T10:00:00Z", "url": "media/a.mp4"}]"#
        let document = try FeedDocumentParser().parse(Data(json.utf8))
        #expect(document.items.isEmpty)
        #expect(document.skipped.first?.reason.contains("relative") == true)
    }

    @Test("a remote listing may not point at local files")
    func remoteFileURL() throws {
        let json = #"[{"public_id": "a", "created_at": "2026-11-01T10:00:00Z", "url": "file:///etc/passwd"}]"#
        let parser = FeedDocumentParser(baseURL: URL(string: "https://feeds.example.com/list.json"))
        let document = try parser.parse(Data(json.utf8))
        #expect(document.items.isEmpty)
        #expect(document.skipped.first?.reason.contains("local file") == true)
    }

    @Test("FeedItem encodes as a manifest entry and decodes back")
    func codableRoundTrip() throws {
        let original = FeedItem(
            publicID: "a/b", createdAt: iso("2026-11-01T10:00:00.250Z"),
            source: URL(string: "https://cdn.example.com/a.mp4")!, duration: 2.5, width: 720, height: 1280,
            bytes: 99, format: "mp4", updatedAt: iso("2026-11-02T10:00:00Z"), etag: "e")
        let data = try JSONEncoder().encode([original])
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        try #require(object.count == 1)
        #expect(object[0]["public_id"] as? String == "a/b")
        #expect(object[0]["created_at"] as? String == "2026-11-01T10:00:00.250Z")
        #expect(object[0]["url"] as? String == "https://cdn.example.com/a.mp4")
        #expect(try JSONDecoder().decode([FeedItem].self, from: data) == [original])
        #expect(try FeedDocumentParser().parse(data).items == [original])

        let minimal = #"{"public_id": "m", "created_at": "2026-11-01", "url": "file:///m.mp4", "updated_at": null}"#
        let decoded = try JSONDecoder().decode(FeedItem.self, from: Data(minimal.utf8))
        #expect(decoded.updatedAt == nil && decoded.source.path == "/m.mp4")
        let absent = #"{"public_id": "m", "created_at": "2026-11-01T10:00:00Z", "url": "file:///m.mp4"}"#
        #expect(try JSONDecoder().decode(FeedItem.self, from: Data(absent.utf8)).updatedAt == nil)
    }
}
