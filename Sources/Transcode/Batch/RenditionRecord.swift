import Feed
import Foundation
import Media

/// One line of `renditions.jsonl`: what a transcode batch made of one feed item, where, and from which version of
/// its source with which settings. Paths are relative to the output folder.
public struct RenditionRecord: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Hashable, Codable {
        case ok
        case failed
    }

    /// One rendition.
    public struct Rendition: Sendable, Hashable, Codable {
        public var name: String
        public var width: Int
        public var height: Int
        /// Peak segment bit rate (HLS `BANDWIDTH`) and the average, bits per second.
        public var bandwidth: Int
        public var averageBandwidth: Int
        public var duration: Double
        public var frames: Int
        public var segmentCount: Int
        /// The MSE codec string, e.g. `avc1.64001f,mp4a.40.2`.
        public var codecs: String
        public var mp4: String?
        public var playlist: String?
        public var initSegment: String?
        public var segments: [String]

        enum CodingKeys: String, CodingKey {
            case name, width, height, bandwidth, duration, frames, codecs, mp4, playlist, segments
            case averageBandwidth = "average_bandwidth"
            case segmentCount = "segment_count"
            case initSegment = "init"
        }
    }

    public var publicID: String
    public var createdAt: String
    public var status: Status
    public var error: String?
    /// The item's source path or URL; a URL without user info and secret query values (``Redaction/redacted(_:)``)
    /// unless the batch was told to keep them (``TranscodeBatch/Configuration/recordsSourceSecrets``).
    public var source: String
    /// The item's folder: every path below lies inside it.
    public var folder: String?
    public var renditions: [Rendition] = []
    public var master: String?
    public var previewMP4: String?
    public var previewWebP: String?
    public var hasAudio: Bool?
    public var duration: Double?
    public var deinterlaced: Bool?
    public var toneMapped: Bool?
    public var still: Bool?
    /// Seconds the item took.
    public var seconds: Double?
    /// The source version and settings it was made from (incremental runs compare them).
    public var sourceSize: Int64?
    public var sourceMtime: Double?
    public var sourceEtag: String?
    public var settings: String

    enum CodingKeys: String, CodingKey {
        case status, error, source, folder, renditions, master, duration, deinterlaced, still, seconds, settings
        case publicID = "public_id"
        case createdAt = "created_at"
        case previewMP4 = "preview_mp4"
        case previewWebP = "preview_webp"
        case hasAudio = "has_audio"
        case toneMapped = "tone_mapped"
        case sourceSize = "source_size"
        case sourceMtime = "source_mtime"
        case sourceEtag = "source_etag"
    }

    /// Every output file the record names.
    public var paths: [String] {
        renditions.flatMap { r in [r.mp4, r.playlist, r.initSegment].compactMap { $0 } + r.segments }
            + [master, previewMP4, previewWebP].compactMap { $0 }
    }
}

/// Reads and writes `renditions.jsonl` (one ``RenditionRecord`` per line, sorted by `public_id`), whole and
/// atomically (``JSONLinesFile``), as thumbnail cards are.
public enum RenditionFile {
    /// The records in the file, and the count of lines that did not parse. A missing file has none.
    public static func read(_ url: URL) -> (records: [RenditionRecord], skippedLines: Int) {
        JSONLinesFile.read(RenditionRecord.self, from: url)
    }

    /// Writes `records` sorted by `public_id`, one per line, atomically.
    public static func write(_ records: [RenditionRecord], to url: URL) throws {
        try JSONLinesFile.write(records, id: \.publicID, to: url)
    }

    /// The record file of `shard`: `renditions.jsonl`, or `renditions-<i>-of-<n>.jsonl`.
    public static func name(for shard: Shard) -> String {
        shard.count == 1 ? "renditions.jsonl" : "renditions-\(shard.index)-of-\(shard.count).jsonl"
    }
}
