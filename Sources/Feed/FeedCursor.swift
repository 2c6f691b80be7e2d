/// Where the next page of a listing starts.
///
/// `nil` as a cursor always means "the first page". A loader hands out the cursor of the following page in
/// ``FeedPage/nextCursor``; the caller passes it back unchanged and never needs to look inside.
///
/// Encoded with `Codable` as its ``description`` (`"page:2"`, `"token:…"`).
public enum FeedCursor: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A 1-based page number, as Pexels pages (`page=2`).
    case page(Int)
    /// An opaque continuation token, as Cloudinary's `next_cursor` or a `next_page` URL to follow.
    case token(String)

    /// A short, stable text form, used as the cache key of the page (`page:2`, `token:…`).
    public var description: String {
        switch self {
        case .page(let number): "page:\(number)"
        case .token(let token): "token:\(token)"
        }
    }

    /// Reads the ``description`` form back.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        if text.hasPrefix("page:"), let number = Int(text.dropFirst(5)) {
            self = .page(number)
        } else if text.hasPrefix("token:") {
            self = .token(String(text.dropFirst(6)))
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a feed cursor: \(text)")
        }
    }

    /// Writes the ``description`` form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
