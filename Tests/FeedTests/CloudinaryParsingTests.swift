import Foundation
import Testing
@testable import Feed

@Suite("Cloudinary listing")
struct CloudinaryParsingTests {
    @Test("resources with folder public_ids, secure_url preferred, next_cursor kept, odd entries reported")
    func listing() throws {
        let document = try FeedDocumentParser().parse(Samples.data("cloudinary.json"))
        #expect(document.format == .cloudinary)
        #expect(document.nextCursor == "8edbc61040178db60b0973ca9494bf3a")
        #expect(document.items.map(\.publicID) == ["samples/elephants", "folder/sub folder/sea-turtle", "http_only"])
        try #require(document.items.count == 3 && document.skipped.count == 5)

        let elephants = document.items[0]
        #expect(elephants.source.absoluteString
            == "https://res.cloudinary.com/demo/video/upload/v1700000000/samples/elephants.mp4")
        #expect(elephants.bytes == 38_751_308 && elephants.width == 1920 && elephants.height == 1080)
        #expect(elephants.duration == 38 && elephants.format == "mp4")
        #expect(document.items[1].createdAt == iso("2026-10-02T09:00:00.123Z"))
        #expect(document.items[2].source.scheme == "http")

        #expect(document.skipped.map(\.id) == ["no_date", "bad_date", "samples/elephants", "no_url", "bad_width"])
        #expect(document.skipped.map(\.index) == [3, 4, 5, 6, 7])
        #expect(document.skipped[0].reason == "missing \"created_at\"")
        #expect(document.skipped[1].reason.contains("is not a date"))
        #expect(document.skipped[2].reason == "duplicate public_id, first at entry 0")
        #expect(document.skipped[3].reason == "missing \"secure_url\"")
        #expect(document.skipped[4].reason == "\"width\" \"wide\" is not a number")
    }

    @Test("detected without a format, and forced with one")
    func detection() throws {
        let data = try Samples.data("cloudinary.json")
        #expect(try FeedDocumentParser(format: .cloudinary).parse(data).items.count == 3)
        #expect(throws: FeedError.self) { try FeedDocumentParser(format: .pexels).parse(data) }
    }
}
