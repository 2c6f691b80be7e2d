import Foundation

extension FeedItem: Codable {
    enum CodingKeys: String, CodingKey {
        case publicID = "public_id"
        case createdAt = "created_at"
        case source = "url"
        case duration, width, height, bytes, format
        case updatedAt = "updated_at"
        case etag
    }

    /// Decodes one native manifest entry. Dates must be ISO 8601 strings and `url` an absolute `file:` or
    /// `http(s):` URL; relative URLs are resolved by ``FeedDocumentParser``, not here.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        publicID = try container.decode(String.self, forKey: .publicID)
        createdAt = try Self.decodeDate(container, .createdAt)
        let text = try container.decode(String.self, forKey: .source)
        guard let url = URL(string: text), FeedItem.isSupportedSource(url) else {
            throw DecodingError.dataCorruptedError(
                forKey: .source, in: container, debugDescription: "not an absolute file or http(s) URL: \(text)")
        }
        source = url
        duration = try container.decodeIfPresent(Double.self, forKey: .duration)
        width = try container.decodeIfPresent(Int.self, forKey: .width)
        height = try container.decodeIfPresent(Int.self, forKey: .height)
        bytes = try container.decodeIfPresent(Int64.self, forKey: .bytes)
        format = try container.decodeIfPresent(String.self, forKey: .format)
        updatedAt = try container.decodeIfPresent(String.self, forKey: .updatedAt) == nil
            ? nil : Self.decodeDate(container, .updatedAt)
        etag = try container.decodeIfPresent(String.self, forKey: .etag)
    }

    /// Encodes the item as one native manifest entry, leaving absent metadata out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(publicID, forKey: .publicID)
        try container.encode(FeedDate.string(from: createdAt), forKey: .createdAt)
        try container.encode(source.absoluteString, forKey: .source)
        try container.encodeIfPresent(duration, forKey: .duration)
        try container.encodeIfPresent(width, forKey: .width)
        try container.encodeIfPresent(height, forKey: .height)
        try container.encodeIfPresent(bytes, forKey: .bytes)
        try container.encodeIfPresent(format, forKey: .format)
        try container.encodeIfPresent(updatedAt.map(FeedDate.string(from:)), forKey: .updatedAt)
        try container.encodeIfPresent(etag, forKey: .etag)
    }

    private static func decodeDate(
        _ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys
    ) throws -> Date {
        let text = try container.decode(String.self, forKey: key)
        guard let date = FeedDate.parseISO8601(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container, debugDescription: "not an ISO 8601 date: \(text)")
        }
        return date
    }

    /// Whether `url` is an absolute URL of a kind an item may point at: `file`, `http` or `https`.
    static func isSupportedSource(_ url: URL) -> Bool {
        switch url.scheme?.lowercased() {
        case "file": return true
        case "http", "https": return url.host != nil
        default: return false
        }
    }
}
