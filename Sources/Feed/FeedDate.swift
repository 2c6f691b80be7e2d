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
        guard trimmed.count >= 10 else { return nil }
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

    /// A date-time (has a `T` after the date) whose time part carries no `Z` and no `+`/`-` offset.
    private static func isZoneless(_ text: String) -> Bool {
        guard let separator = text.firstIndex(where: { $0 == "T" || $0 == "t" }) else { return false }
        let time = text[text.index(after: separator)...]
        return !time.contains(where: { $0 == "Z" || $0 == "z" || $0 == "+" || $0 == "-" })
    }
}
