import Foundation

/// One video (or image, or audio track) in a feed.
///
/// An item is identified by its ``publicID``, which is stable across reloads and may contain slashes
/// (Cloudinary folders, sub-folders of a scanned directory). Everything but the identity, the creation date and the
/// ``source`` is optional metadata that a listing may or may not carry.
///
/// Encoded with `Codable` as one entry of the native manifest (see ``FeedFormat/manifest``):
/// `{"public_id", "created_at", "url", "duration", "width", "height", "bytes", "format", "updated_at", "etag"}`,
/// dates as ISO 8601 strings in UTC with milliseconds, absent metadata left out.
public struct FeedItem: Sendable, Hashable, Identifiable {
    /// The stable identity of the item, e.g. `travel/lisbon/tram_28` or `1448735`.
    public var publicID: String
    /// When the item was created (uploaded, recorded, or for a scanned file its modification time).
    public var createdAt: Date
    /// Where the media is: a `file:` URL or an `http:`/`https:` URL.
    public var source: URL
    /// Duration in seconds, when the listing states it.
    public var duration: Double?
    /// Width in pixels of ``source``, when known.
    public var width: Int?
    /// Height in pixels of ``source``, when known.
    public var height: Int?
    /// Size of ``source`` in bytes, when known.
    public var bytes: Int64?
    /// Container or file format, lower case without a dot (`mp4`, `webm`, `jpg`), when known.
    public var format: String?
    /// When the item was last changed, when the listing states it.
    public var updatedAt: Date?
    /// An entity tag of ``source``, for conditional requests, when the listing states it.
    public var etag: String?

    /// `Identifiable` conformance: the ``publicID``.
    public var id: String { publicID }

    /// Creates an item; only the identity, creation date and source are required.
    public init(
        publicID: String,
        createdAt: Date,
        source: URL,
        duration: Double? = nil,
        width: Int? = nil,
        height: Int? = nil,
        bytes: Int64? = nil,
        format: String? = nil,
        updatedAt: Date? = nil,
        etag: String? = nil
    ) {
        self.publicID = publicID
        self.createdAt = createdAt
        self.source = source
        self.duration = duration
        self.width = width
        self.height = height
        self.bytes = bytes
        self.format = format
        self.updatedAt = updatedAt
        self.etag = etag
    }
}
