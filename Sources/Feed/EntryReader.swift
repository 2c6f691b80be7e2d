import Foundation

/// Why one entry of a listing is not a valid item; becomes the ``SkippedEntry/reason``.
struct EntryProblem: Error {
    var reason: String
}

/// Reads the fields of one listing entry, throwing an ``EntryProblem`` that names the field and what is wrong with it.
///
/// Rules shared by every shape: a required field must be present, non-null and valid; an optional field may be absent
/// or `null`, but when it has a value the value must be valid — a wrong value skips the entry rather than being
/// dropped silently. Numbers may be given as numeric strings (`"720"`).
struct EntryReader {
    let fields: [String: JSONValue]

    /// Fails with `not an object` unless `value` is a JSON object.
    init(_ value: JSONValue) throws(EntryProblem) {
        guard let fields = value.objectValue else {
            throw EntryProblem(reason: "not an object but \(value.kindDescription)")
        }
        self.fields = fields
    }

    /// The value of `key` unless it is absent or `null`.
    func value(_ key: String) -> JSONValue? {
        switch fields[key] {
        case nil, .null?: nil
        case let value?: value
        }
    }

    /// A best-effort identity for reports, read without failing: the first of `keys` that holds a string or number.
    func identity(_ keys: String...) -> String? {
        for key in keys {
            switch value(key) {
            case .string(let text)? where !text.isEmpty: return text
            case .integer(let number)?: return String(number)
            default: continue
            }
        }
        return nil
    }

    func requiredString(_ key: String) throws(EntryProblem) -> String {
        guard let text = try optionalString(key) else { throw EntryProblem(reason: "missing \"\(key)\"") }
        return text
    }

    func optionalString(_ key: String) throws(EntryProblem) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            throw EntryProblem(reason: "\"\(key)\" is \(value.kindDescription), not a string")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw EntryProblem(reason: "\"\(key)\" is empty") }
        return trimmed
    }

    func requiredDate(_ key: String, parse: (String) -> Date?) throws(EntryProblem) -> Date {
        guard let date = try optionalDate(key, parse: parse) else {
            throw EntryProblem(reason: "missing \"\(key)\"")
        }
        return date
    }

    func optionalDate(_ key: String, parse: (String) -> Date?) throws(EntryProblem) -> Date? {
        guard let text = try optionalString(key) else { return nil }
        guard let date = parse(text) else { throw EntryProblem(reason: "\"\(key)\" \"\(text)\" is not a date") }
        return date
    }

    /// A non-negative whole number.
    func optionalCount(_ key: String) throws(EntryProblem) -> Int64? {
        guard let number = try optionalNumber(key) else { return nil }
        guard number == number.rounded(), number < 9.0e18 else {
            throw EntryProblem(reason: "\"\(key)\" \(Self.text(number)) is not a whole number")
        }
        return Int64(number)
    }

    /// A non-negative, finite number.
    func optionalNumber(_ key: String) throws(EntryProblem) -> Double? {
        guard let value = value(key) else { return nil }
        let number: Double
        switch value {
        case .integer(let integer): number = Double(integer)
        case .number(let double): number = double
        case .string(let text):
            guard let parsed = Double(text.trimmingCharacters(in: .whitespaces)) else {
                throw EntryProblem(reason: "\"\(key)\" \"\(text)\" is not a number")
            }
            number = parsed
        default:
            throw EntryProblem(reason: "\"\(key)\" is \(value.kindDescription), not a number")
        }
        guard number.isFinite else { throw EntryProblem(reason: "\"\(key)\" is not a finite number") }
        guard number >= 0 else { throw EntryProblem(reason: "\"\(key)\" \(Self.text(number)) is negative") }
        return number
    }

    /// `-5` rather than `-5.0`; `2.5` as is.
    private static func text(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }

    /// The item of an entry whose public ID and creation time were read: its source from `urlKey`, then the optional
    /// fields Cloudinary's resources and the native manifest share — `duration`, `width`, `height`, `bytes`, `format`
    /// (lower-cased), `updated_at` (ISO 8601), `etag` — checked in that order.
    func item(publicID: String, createdAt: Date, urlKey: String, _ resolver: SourceResolver) throws(EntryProblem)
        -> FeedItem {
        FeedItem(
            publicID: publicID,
            createdAt: createdAt,
            source: try requiredURL(urlKey, resolver),
            duration: try optionalNumber("duration"),
            width: try optionalCount("width").map { Int($0) },
            height: try optionalCount("height").map { Int($0) },
            bytes: try optionalCount("bytes"),
            format: try optionalString("format")?.lowercased(),
            updatedAt: try optionalDate("updated_at", parse: FeedDate.parseISO8601),
            etag: try optionalString("etag")
        )
    }

    /// The URL in `key`, resolved by `resolver`.
    func requiredURL(_ key: String, _ resolver: SourceResolver) throws(EntryProblem) -> URL {
        let text = try requiredString(key)
        return try resolver.resolve(text, field: key)
    }
}
