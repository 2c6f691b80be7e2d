import Foundation
import Testing
@testable import Feed

@Suite("Dates")
struct FeedDateTests {
    @Test("ISO 8601 with and without fractional seconds and offsets", arguments: [
        ("2026-11-01T10:00:00Z", 1_793_527_200.0),
        ("2026-11-01T10:00:00.250Z", 1_793_527_200.25),
        ("2026-11-01T12:00:00+02:00", 1_793_527_200.0),
        ("2026-11-01T10:00:00.5+0000", 1_793_527_200.5),
        ("2026-11-01T10:00:00", 1_793_527_200.0),
        ("2026-11-01", 1_793_491_200.0),
    ])
    func iso8601(text: String, seconds: Double) throws {
        let date = try #require(FeedDate.parseISO8601(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.001)
    }

    @Test("not ISO 8601", arguments: [
        "yesterday", "2026-02-30T09:00:00Z", "2026-11-01T24:30:00Z", "2025-02-29", "2026-11-01 10:00", "", "14/03/2018",
    ])
    func notISO8601(text: String) {
        #expect(FeedDate.parseISO8601(text) == nil)
    }

    @Test("image-feed dates are en_US_POSIX, 12-hour, UTC")
    func imageFeed() throws {
        #expect(FeedDate.parseImageFeed("Mar 14, 2018 6:50:24 PM") == iso("2018-03-14T18:50:24Z"))
        #expect(FeedDate.parseImageFeed("Dec 1, 2017 12:00:00 AM") == iso("2017-12-01T00:00:00Z"))
        #expect(FeedDate.parseImageFeed("Mar 14, 2018 6:50:24\u{202F}PM") == iso("2018-03-14T18:50:24Z"))
        #expect(FeedDate.parseImageFeed("Mar 14, 2018 16:50:24 PM") == nil)
        #expect(FeedDate.parseImageFeed("14/03/2018 18:50") == nil)
    }

    @Test("output is ISO 8601 UTC with milliseconds and reads back")
    func roundTrip() throws {
        let date = Date(timeIntervalSince1970: 1_793_527_200.25)
        #expect(FeedDate.string(from: date) == "2026-11-01T10:00:00.250Z")
        #expect(FeedDate.parse(FeedDate.string(from: date)) == date)
    }
}
