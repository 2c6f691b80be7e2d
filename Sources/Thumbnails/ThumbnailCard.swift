import Foundation

/// One line of `cards.jsonl`: what the batch did for one item.
///
/// Keys: `public_id`, `created_at`, `thumbnails` (paths relative to the output folder), `width`, `height` (of the
/// first thumbnail), `duration`, `source`, `status` (`ok` or `failed`), `error`, `blank` (auto found only black or
/// uniform frames), `frame_times`, `tone_mapping`, and what incremental runs compare: `source_size`,
/// `source_mtime`, `source_etag`, `options`.
public struct ThumbnailCard: Sendable, Hashable, Codable {
    /// Outcome of an item.
    public enum Status: String, Sendable, Hashable, Codable {
        /// Thumbnails written.
        case ok
        /// The item failed; ``ThumbnailCard/error`` says why.
        case failed
    }

    /// The item's identity.
    public var publicID: String
    /// The item's creation date, ISO 8601.
    public var createdAt: String
    /// Written files, relative to the output folder.
    public var thumbnails: [String]
    /// Width of the first thumbnail.
    public var width: Int?
    /// Height of the first thumbnail.
    public var height: Int?
    /// Duration of the item in seconds.
    public var duration: Double?
    /// The source path or URL; a URL without user info and secret query values (``Redaction/redacted(_:)``) unless
    /// the batch was told to keep them (``ThumbnailBatch/Configuration/recordsSourceSecrets``).
    public var source: String
    /// `ok` or `failed`.
    public var status: Status
    /// Why the item failed: a one-line description naming the item.
    public var error: String?
    /// Whether `auto` found only black or near-uniform frames.
    public var blank: Bool?
    /// Times in seconds of the frames used.
    public var frameTimes: [Double?]?
    /// `pq` or `hlg` when an HDR source was tone mapped.
    public var toneMapping: String?
    /// Size in bytes of a local source when it was rendered.
    public var sourceSize: Int64?
    /// Modification time (seconds since 1970) of a local source when it was rendered.
    public var sourceMtime: Double?
    /// ETag or last-modified date of a URL source, from the feed listing.
    public var sourceEtag: String?
    /// ``ThumbnailOptions/fingerprint`` of the run that made the card (an HDR card's with `;tm=hable` after it: tone-mapped
    /// by libavfilter's curve).
    public var options: String

    enum CodingKeys: String, CodingKey {
        case publicID = "public_id", createdAt = "created_at", thumbnails, width, height, duration, source, status
        case error, blank, frameTimes = "frame_times", toneMapping = "tone_mapping", sourceSize = "source_size"
        case sourceMtime = "source_mtime", sourceEtag = "source_etag", options
    }
}
