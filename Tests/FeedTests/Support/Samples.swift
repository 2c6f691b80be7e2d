import Foundation

/// The sample documents committed under Tests/FeedTests/Samples, found relative to this source file.
enum Samples {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Samples", isDirectory: true)

    static func url(_ name: String) -> URL {
        directory.appendingPathComponent(name)
    }

    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: url(name))
    }
}

/// A fixed instant for tests that need "now".
let referenceDate = Date(timeIntervalSince1970: 1_800_000_000)

/// `2026-11-01T10:00:00Z` and friends, as dates.
func iso(_ text: String) -> Date {
    guard let date = FeedDateForTests.parse(text) else { fatalError("bad test date \(text)") }
    return date
}

private enum FeedDateForTests {
    static func parse(_ text: String) -> Date? {
        try? Date.ISO8601FormatStyle(includingFractionalSeconds: text.contains(".")).parse(text)
    }
}
