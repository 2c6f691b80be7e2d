import Foundation
import Media
import Prefetch

/// What a viewer's page says over the WebSocket, parsed with every number bounded: an index the server could never
/// list, a time past a day, a box past 16384 pixels or a rendition name past 64 bytes is not a message.
enum ViewerMessage: Equatable {
    /// The page's box in device pixels, the rendition it plays, the most bits per second its network affords
    /// (its bandwidth estimate times a safety factor; nil: no cap), and the video codec it plays where an item has
    /// renditions of it (`h264`, `av1`: what its `MediaSource.isTypeSupported` said; nil: H.264).
    case hello(width: Int?, height: Int?, rendition: String?, bandwidth: Int? = nil, codec: VideoCodec? = nil)
    /// The viewer is at `index` (the item `item`, when said) with its playhead at `time` seconds, its card playing
    /// renditions of `codec` (when said: a card shown at once plays the H.264 ladder until its AV1 set is made).
    case at(index: Int, item: String?, time: Double, codec: VideoCodec? = nil)

    /// Indices at most this (the listing's cursors stop there too).
    static let maxIndex = 999_999_999
    static let maxTime = 86_400.0
    static let maxSide = 16_384
    /// Bits per second at most in a `hello`'s bandwidth (10 Gb/s).
    static let maxBandwidth = 1e10
    /// A public ID's length at most in a message.
    static let maxItemBytes = 2048

    private struct Raw: Decodable {
        var type: String
        var index: Int?
        var time: Double?
        var width: Int?
        var height: Int?
        var rendition: String?
        var item: String?
        var bandwidth: Double?
        var codec: String?
    }

    /// A message's `codec`: nil when absent (`.some(nil)`), the codec when known, and nil (not a message) otherwise.
    private static func codec(_ name: String?) -> VideoCodec?? {
        guard let name else { return .some(nil) }
        return VideoCodec(rawValue: name).map { .some($0) }
    }

    /// The message in `text`, or nil.
    static func parse(_ text: String) -> ViewerMessage? {
        guard let raw = try? JSONDecoder().decode(Raw.self, from: Data(text.utf8)) else { return nil }
        switch raw.type {
        case "hello":
            if let width = raw.width, !(1...maxSide).contains(width) { return nil }
            if let height = raw.height, !(1...maxSide).contains(height) { return nil }
            if let rendition = raw.rendition, rendition.utf8.count > 64 { return nil }
            if let bandwidth = raw.bandwidth, !(bandwidth >= 1 && bandwidth <= maxBandwidth) { return nil }
            guard let codec = codec(raw.codec) else { return nil }
            return .hello(width: raw.width, height: raw.height, rendition: raw.rendition,
                          bandwidth: raw.bandwidth.map { Int($0) }, codec: codec)
        case "at":
            guard let index = raw.index, (0...maxIndex).contains(index) else { return nil }
            let time = raw.time ?? 0
            guard time.isFinite, (0...maxTime).contains(time) else { return nil }
            if let item = raw.item, item.isEmpty || item.utf8.count > maxItemBytes { return nil }
            guard let codec = codec(raw.codec) else { return nil }
            return .at(index: index, item: raw.item, time: time, codec: codec)
        default:
            return nil
        }
    }
}

/// `{"type":"swipe","index":…,"item":…,"hit":…}`: whether the item a viewer moved to was ready (the index and item
/// as the viewer said them).
struct SwipeReply: Encodable {
    var type = "swipe"
    var index: Int
    var item: String?
    var hit: Bool
}

/// `{"type":"policy","name":…,"attach":{"ahead":…,"behind":…},"posters":…}`: the server's prefetch policy by name
/// and the window it asks of the page (``PageWindow``): cards attached after and before the current one, and cards
/// with their poster loaded on each side. Sent once a session, right after the first `feed` message.
struct PolicyReply: Encodable {
    struct Attach: Encodable {
        var ahead: Int
        var behind: Int
    }
    var type = "policy"
    var name: String
    var attach: Attach
    var posters: Int

    init(policy: String, window: PageWindow) {
        name = policy
        attach = Attach(ahead: window.ahead, behind: window.behind)
        posters = window.posters
    }
}

/// `{"type":"window","current":…,"items":[{"index":…,"state":…}]}`: current ± 2 as the engine sees them.
struct WindowReply: Encodable {
    struct Item: Encodable {
        var index: Int
        var state: String
    }
    var type = "window"
    var current: Int
    var items: [Item]
}
