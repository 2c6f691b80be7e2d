import Feed
import Foundation
import Media
import Transcode

/// One page of `GET /api/feed`, in the Cloudinary listing's shape (`resources`, `next_cursor`).
struct ListingPage: Encodable {
    var resources: [Card]
    var nextCursor: String?
    /// The item count once the listing's end is known.
    var total: Int?
    /// How many times the listing has changed since the server started (a watched source).
    var generation: Int

    enum CodingKeys: String, CodingKey {
        case resources, total, generation
        case nextCursor = "next_cursor"
    }
}

/// One feed card: the item's own fields, its display shape, and the URLs of its poster, preview and renditions; or
/// the error that keeps it from playing.
struct Card: Encodable {
    struct Rendition: Encodable {
        var name: String
        /// `h264` or `av1`: the page plays one codec's renditions per item (the AV1 ones where its MSE takes them).
        var codec: String
        var width: Int
        var height: Int
        var codecs: String
        var mime: String
        /// Peak bits per second: the video's VBV cap plus the audio's rate (what the page's bandwidth rule compares).
        var bandwidth: Int
        var initialization: String
        var segments: [String]
        var segmentDurations: [Double]
        var mp4: String?
        /// For an AV1 rendition (made on demand): whether its first segment was made when the card was answered. The
        /// page starts a card it shows at once on its AV1 renditions only when this is true (a cold item's AV1 first
        /// segment would keep the viewer waiting), else on the H.264 ladder, made with the manifest.
        var ready: Bool?

        enum CodingKeys: String, CodingKey {
            case name, codec, width, height, codecs, mime, bandwidth, segments, mp4, ready
            case initialization = "init"
            case segmentDurations = "segment_durations"
        }
    }

    var index: Int
    var publicID: String
    var createdAt: String
    var duration: Double?
    var width: Int?
    var height: Int?
    var hasAudio: Bool?
    var still: Bool?
    var poster: String?
    var preview: String?
    /// The HLS multivariant playlist, for native players (AVPlayer, ExoPlayer): made from the manifest, its segments
    /// on request.
    var hls: String?
    var renditions: [Rendition]?
    var error: String?
    /// Listed before its manifest was made (`pending=1`): the item's own fields and its poster; the page asks for
    /// the whole card (`item=<public_id>`) when it needs to play it.
    var pending: Bool?

    enum CodingKeys: String, CodingKey {
        case index, duration, width, height, still, poster, preview, hls, renditions, error, pending
        case publicID = "public_id"
        case createdAt = "created_at"
        case hasAudio = "has_audio"
    }

    /// The card of a playable item; `cached` says whether a cache key's file is made (an AV1 rendition's `ready`).
    init(entry: ServedCatalog.Entry, manifest: ItemManifest, settings: TranscodeSettings,
         cached: (String) -> Bool) {
        index = entry.index
        publicID = entry.item.publicID
        createdAt = Card.date(entry.item.createdAt)
        let plan = manifest.plan
        duration = (plan.duration * 1000).rounded() / 1000
        width = plan.displayWidth
        height = plan.displayHeight
        hasAudio = plan.hasAudio
        still = plan.isStill ? true : nil
        poster = Card.url(.poster, of: entry)
        preview = settings.preview == nil ? nil : Card.url(.preview, of: entry)
        hls = settings.makesSegments ? Card.url(.masterPlaylist, of: entry) : nil
        // A card's size must not follow what an upload claims: at most `maxListedSegments` are listed (the first
        // ten minutes at 2 s), however long the container says the item is.
        let listed = min(plan.segmentCount, Card.maxListedSegments)
        let durations = manifest.segmentDurations.prefix(listed).map { ($0 * 1000).rounded() / 1000 }
        // The peak rate a player needs: the video's VBV cap and the audio's rate (as the master playlist says).
        let audio = plan.hasAudio ? settings.audioBitrate : 0
        // An AV1 rendition is listed at its H.264 twin's peak rate: it is encoded without a cap, and over 11 real
        // clips its peak segment rate was 0.31-1.07 times the twin's (median 0.77; docs/serve.md).
        renditions = plan.renditions.enumerated().compactMap { r, rendition in
            let codecs = manifest.listedCodecs(r)
            // A manifest without an AV1 rendition's codecs string cannot list it.
            guard !codecs.isEmpty else { return nil }
            let name = rendition.name
            return Rendition(
                name: rendition.name, codec: rendition.videoCodec.rawValue, width: rendition.width,
                height: rendition.height, codecs: codecs,
                mime: "video/mp4; codecs=\"\(codecs)\"", bandwidth: rendition.maxBitrate + audio,
                initialization: Card.url(.initialization(rendition: name), of: entry),
                segments: (0..<listed).map { Card.url(.segment(rendition: name, index: $0), of: entry) },
                segmentDurations: durations, mp4: settings.makesMP4 ? Card.url(.mp4(rendition: name), of: entry) : nil,
                ready: rendition.videoCodec == .h264 ? nil
                    : cached(ItemFile.segment(rendition: name, index: 0).key(in: entry.folder)))
        }
    }

    /// The card of an item whose manifest is not made yet: its own fields and its poster (made without the manifest).
    init(pendingEntry entry: ServedCatalog.Entry, settings: TranscodeSettings) {
        index = entry.index
        publicID = entry.item.publicID
        createdAt = Card.date(entry.item.createdAt)
        poster = Card.url(.poster, of: entry)
        // A native player may start from the master playlist at once: asking for it makes the manifest.
        hls = settings.makesSegments ? Card.url(.masterPlaylist, of: entry) : nil
        pending = true
    }

    /// The card of an item that cannot be played.
    init(entry: ServedCatalog.Entry, error: String) {
        index = entry.index
        publicID = entry.item.publicID
        createdAt = Card.date(entry.item.createdAt)
        self.error = error
    }

    /// Segments listed per rendition at most (a header claiming 143,165 s listed 71,584 a rendition: 13.8 MB of
    /// JSON for one card).
    static let maxListedSegments = 300

    static func date(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: date)
    }

    /// The URL of `file` of the item of `entry`.
    static func url(_ file: ItemFile, of entry: ServedCatalog.Entry) -> String {
        "/media/" + encode(file.key(in: entry.folder))
    }

    /// `folder` as a URL path: each component percent-encoded, slashes kept between them (the card's URLs, and the
    /// master playlist's relative ones).
    static func encode(_ path: String) -> String {
        let allowed = CharacterSet(charactersIn:
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@")
        return path.split(separator: "/", omittingEmptySubsequences: false)
            .map { String($0).addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
            .joined(separator: "/")
    }
}
