import Foundation

/// The date formats feeds use, parsed and printed in one place.
///
/// - ISO 8601 date-times with or without fractional seconds and with `Z` or a numeric offset
///   (`2026-11-01T10:00:00Z`, `2026-11-01T10:00:00.250+02:00`). A date-time without a zone and a bare date
///   (`2026-11-01`) are read as UTC.
/// - The image-feed style `Mar 14, 2018 6:50:24 PM`: English month abbreviations, 12-hour clock, read with the fixed
///   `en_US_POSIX` locale in **UTC**, because such listings state no zone.
public enum FeedDate {
    private static let iso8601 = Date.ISO8601FormatStyle(includingFractionalSeconds: false)

    private static let iso8601Output = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// `DateFormatter` is thread-safe for parsing and `Sendable` in swift-corelibs-foundation and on Apple platforms.
    private static let imageFeedFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "MMM d, yyyy h:mm:ss a"
        formatter.isLenient = false
        return formatter
    }()

    /// Parses an ISO 8601 date or date-time; `nil` when `text` is not one.
    public static func parseISO8601(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.count >= 10, hasValidFields(trimmed) else { return nil }
        if let date = try? iso8601.parse(trimmed) { return date }
        if isZoneless(trimmed), let date = try? iso8601.parse(trimmed + "Z") { return date }
        if trimmed.count == 10, let date = try? iso8601.parse(trimmed + "T00:00:00Z") { return date }
        return nil
    }

    /// Parses an image-feed date such as `Mar 14, 2018 6:50:24 PM` as UTC; `nil` when `text` is not one.
    /// Non-breaking spaces (as some formatters put before `PM`) count as spaces.
    public static func parseImageFeed(_ text: String) -> Date? {
        let normalized = text
            .replacingOccurrences(of: "\u{202F}", with: " ")
            .replacingOccurrences(of: "\u{00A0}", with: " ")
            .split(separator: " ", omittingEmptySubsequences: true)
            .joined(separator: " ")
        guard !normalized.isEmpty else { return nil }
        return imageFeedFormatter.date(from: normalized)
    }

    /// Parses either format: ISO 8601 first, then the image-feed style.
    public static func parse(_ text: String) -> Date? {
        parseISO8601(text) ?? parseImageFeed(text)
    }

    /// Formats `date` as ISO 8601 in UTC with milliseconds, e.g. `2026-11-01T10:00:00.000Z`.
    public static func string(from date: Date) -> String {
        iso8601Output.format(date)
    }

    /// Whether the calendar date (and the time, if any) names a real instant: the parser would read `2026-02-30` as
    /// March 2 and `25:00` as the next day.
    private static func hasValidFields(_ text: String) -> Bool {
        let characters = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= characters.count else { return nil }
            var value = 0
            for byte in characters[range] {
                guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              (1...12).contains(month), day >= 1
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard day <= days else { return false }
        guard characters.count > 10 else { return true }
        guard let hour = number(11..<13), let minute = number(14..<16) else { return false }
        let second = number(17..<19) ?? 0
        return hour <= 23 && minute <= 59 && second <= 60
    }

    /// A date-time (has a `T` after the date) whose time part carries no `Z` and no `+`/`-` offset.
    private static func isZoneless(_ text: String) -> Bool {
        guard let separator = text.firstIndex(where: { $0 == "T" || $0 == "t" }) else { return false }
        let time = text[text.index(after: separator)...]
        return !time.contains(where: { $0 == "Z" || $0 == "z" || $0 == "+" || $0 == "-" })
    }
}
