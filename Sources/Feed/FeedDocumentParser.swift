import Foundation

/// Parses a listing document in any ``FeedFormat`` into a ``FeedDocument``.
///
/// Invalid entries are skipped and reported in ``FeedDocument/skipped`` with their reason, as are later entries that
/// repeat an earlier public ID. A document that is not JSON (nor JSON Lines), or whose top level is not the expected
/// shape, throws ``FeedError/malformedDocument(source:reason:)``.
public struct FeedDocumentParser: Sendable {
    /// The expected shape; `nil` detects it from the document (`resources` → Cloudinary, `videos` → Pexels,
    /// an array of `{"url", "created"}` → image feed, anything else → native manifest).
    public var format: FeedFormat?
    /// What relative URLs resolve against: the folder of a local document, or the URL of a downloaded one.
    public var baseURL: URL?
    /// The display the Pexels rendition is chosen for.
    public var displaySize: DisplaySize
    /// The creation date given to Pexels videos, whose listings carry none: when the listing was read.
    public var listedAt: Date
    /// How the document is named in errors: a path or a redacted URL.
    public var sourceName: String

    /// Creates a parser.
    public init(
        format: FeedFormat? = nil,
        baseURL: URL? = nil,
        displaySize: DisplaySize = .portraitFullHD,
        listedAt: Date = Date(),
        sourceName: String = "document"
    ) {
        self.format = format
        self.baseURL = baseURL
        self.displaySize = displaySize
        self.listedAt = listedAt
        self.sourceName = sourceName
    }

    /// Parses `data`; throws ``FeedError/malformedDocument(source:reason:)`` when it is not a listing at all.
    public func parse(_ data: Data) throws(FeedError) -> FeedDocument {
        let resolver = SourceResolver(base: baseURL)
        guard data.contains(where: { !Self.isJSONWhitespace($0) }) else { throw malformed("the document is empty") }
        let root: JSONValue
        do {
            root = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            if format == nil || format == .manifest, let lines = Self.jsonLines(data) {
                return collect(.manifest, lines) { value throws(EntryProblem) in try manifestItem(value, resolver) }
            }
            throw malformed("not valid JSON (\(Self.summary(of: error, in: data)))")
        }
        let shape: FeedFormat
        if let format { shape = format } else { shape = try detect(root) }
        switch shape {
        case .manifest: return try parseManifest(root, resolver)
        case .cloudinary: return try parseCloudinary(root, resolver)
        case .pexels: return try parsePexels(root, resolver)
        case .imagefeed: return try parseImageFeed(root, resolver)
        }
    }

    /// The error for a document that is not a listing.
    func malformed(_ reason: String) -> FeedError {
        .malformedDocument(source: sourceName, reason: reason)
    }

    /// Turns `entries` (position, value) into items with `makeItem`, skipping invalid entries and duplicate IDs.
    /// A `nil` value is an entry that is not JSON (a bad line of JSON Lines).
    func collect(
        _ format: FeedFormat, _ entries: [(index: Int, value: JSONValue?)],
        makeItem: (JSONValue) throws(EntryProblem) -> FeedItem
    ) -> FeedDocument {
        var items: [FeedItem] = []
        var skipped: [SkippedEntry] = []
        var firstIndex: [String: Int] = [:]
        for (index, entry) in entries {
            guard let value = entry else {
                skipped.append(SkippedEntry(index: index, id: nil, reason: "line \(index + 1) is not valid JSON"))
                continue
            }
            do {
                let item = try makeItem(value)
                if let first = firstIndex[item.publicID] {
                    skipped.append(SkippedEntry(
                        index: index, id: item.publicID, reason: "duplicate public_id, first at entry \(first)"))
                    continue
                }
                firstIndex[item.publicID] = index
                items.append(item)
            } catch {
                let id = (try? EntryReader(value))?.identity("public_id", "id", "url", "secure_url")
                skipped.append(SkippedEntry(index: index, id: id, reason: error.reason))
            }
        }
        return FeedDocument(format: format, items: items, skipped: skipped)
    }

    private func detect(_ root: JSONValue) throws(FeedError) -> FeedFormat {
        switch root {
        case .object(let fields):
            if fields["resources"] != nil { return .cloudinary }
            if fields["videos"] != nil { return .pexels }
            if fields["public_id"] != nil { return .manifest }
            throw malformed("a JSON object with neither \"resources\" (Cloudinary) nor \"videos\" (Pexels)")
        case .array(let elements):
            let first = elements.lazy.compactMap(\.objectValue).first
            if let first, first["public_id"] == nil, first["url"] != nil, first["created"] != nil {
                return .imagefeed
            }
            return .manifest
        default:
            throw malformed("the top level is \(root.kindDescription), not a listing")
        }
    }

    /// The entries of a JSON Lines document, or `nil` when its first non-blank line is not a JSON object.
    /// Lines that are not JSON become `nil` entries, reported as skipped.
    private static func jsonLines(_ data: Data) -> [(index: Int, value: JSONValue?)]? {
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        var entries: [(index: Int, value: JSONValue?)] = []
        for (number, line) in lines.enumerated() where line.contains(where: { !isJSONWhitespace($0) }) {
            let value = try? JSONDecoder().decode(JSONValue.self, from: Data(line))
            if entries.isEmpty && value?.objectValue == nil { return nil }
            entries.append((number, value))
        }
        return entries.isEmpty ? nil : entries
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// A short reason why `data` is not JSON. `JSONDecoder` only says "not valid JSON" on Linux, so ask
    /// `JSONSerialization`, which names the position ("Invalid value around character 6.").
    private static func summary(of error: any Error, in data: Data) -> String {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            if let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String { return detail }
        }
        if case DecodingError.dataCorrupted(let context) = error { return context.debugDescription }
        return String(describing: error)
    }
}
