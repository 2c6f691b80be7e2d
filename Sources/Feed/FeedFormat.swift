/// The listing shapes a feed document can have.
public enum FeedFormat: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The native manifest: a JSON array, or JSON Lines (one object per line), of
    /// `{"public_id", "created_at", "url", "duration"?, "width"?, "height"?, "bytes"?, "format"?, "updated_at"?,
    /// "etag"?}`. A relative `url` resolves against the manifest's folder (or the URL it was downloaded from).
    case manifest
    /// A Cloudinary resource listing: `{"resources": [{"public_id", "created_at", "secure_url", "format", "bytes",
    /// "width", "height", "duration"}], "next_cursor"}`. Public IDs may contain slashes (folders).
    case cloudinary
    /// A Pexels video listing: `{"page", "per_page", "total_results", "videos": [{"id", "url", "duration", "width",
    /// "height", "user", "video_files": [{"link", "quality", "width", "height", "file_type"}]}], "next_page"}`.
    /// The item's source is the video file that best fits the display size (see ``DisplaySize``).
    case pexels
    /// An image-feed list: `[{"url", "created", "updated"}]` with dates such as `Mar 14, 2018 6:50:24 PM` (UTC).
    case imagefeed

    /// The raw value, as used by the CLI's `--format`.
    public var description: String { rawValue }
}
