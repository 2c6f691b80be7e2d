import Foundation
import Testing
@testable import Feed

@Suite("Image feed")
struct ImageFeedParsingTests {
    @Test("dates like Mar 14, 2018 6:50:24 PM in UTC; public_id from the URL path; odd entries reported")
    func listing() throws {
        let parser = FeedDocumentParser(baseURL: URL(fileURLWithPath: "/feeds/images/", isDirectory: true))
        let document = try parser.parse(Samples.data("imagefeed.json"))
        #expect(document.format == .imagefeed)
        #expect(document.items.map(\.publicID) == ["feed/2018/IMG_0001", "photos/beach", "feed/2018/IMG_0002"])
        try #require(document.items.count == 3 && document.skipped.count == 4)

        let first = document.items[0]
        #expect(first.createdAt == iso("2018-03-14T18:50:24Z"))
        #expect(first.updatedAt == iso("2018-03-15T09:05:00Z"))
        #expect(first.format == "jpg")
        #expect(document.items[1].source == URL(fileURLWithPath: "/feeds/images/photos/beach.png"))
        #expect(document.items[1].createdAt == iso("2017-12-01T00:00:00Z"))
        #expect(document.items[2].createdAt == iso("2018-03-16T07:00:00Z"))
        #expect(document.items[2].format == "jpg")

        #expect(document.skipped.map(\.index) == [3, 4, 5, 6])
        #expect(document.skipped[0].reason == "\"created\" \"14/03/2018 18:50\" is not a date")
        #expect(document.skipped[1].reason == "missing \"url\"")
        #expect(document.skipped[2].reason.contains("16:50:24 PM"))
        #expect(document.skipped[3].reason == "\"updated\" \"soon\" is not a date")
    }
}
