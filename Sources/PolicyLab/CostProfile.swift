import Foundation

/// What preparing one item costs on the machine being modelled: the Media layer's steps as FeedPlayer's preparer
/// runs them (open/probe, decoder open, first frame, each further frame, all including the conversion to the display
/// size and format), and what a decoded frame holds.
public struct ItemCosts: Sendable, Codable, Equatable {
    /// A label (the calibrated file's name).
    public var name: String
    /// Opening the container and reading stream information, in seconds.
    public var openSeconds: Double
    /// Opening the video decoder (and the converter), in seconds.
    public var decoderOpenSeconds: Double
    /// Decoding and converting the first frame (after the decoder opened, or after seeking back to the start).
    public var firstFrameSeconds: Double
    /// Decoding and converting each further frame.
    public var frameSeconds: Double
    /// Bytes of one converted frame (counted against the memory budget).
    public var bytesPerFrame: Int
    /// Frames per second of the item.
    public var frameRate: Double
    /// The item's duration in seconds; nil lets the swipe model draw one per item.
    public var duration: Double?
    /// The file's size in bytes (for the network model); nil uses the network's bitrate.
    public var sizeBytes: Int?

    /// Costs for one kind of item.
    public init(name: String, openSeconds: Double, decoderOpenSeconds: Double, firstFrameSeconds: Double,
                frameSeconds: Double, bytesPerFrame: Int, frameRate: Double, duration: Double? = nil,
                sizeBytes: Int? = nil) {
        self.name = name
        self.openSeconds = openSeconds
        self.decoderOpenSeconds = decoderOpenSeconds
        self.firstFrameSeconds = firstFrameSeconds
        self.frameSeconds = frameSeconds
        self.bytesPerFrame = bytesPerFrame
        self.frameRate = frameRate
        self.duration = duration
        self.sizeBytes = sizeBytes
    }

    /// Why these values cannot be simulated, or nil.
    func problem() -> String? {
        let times = [("openSeconds", openSeconds), ("decoderOpenSeconds", decoderOpenSeconds),
                     ("firstFrameSeconds", firstFrameSeconds), ("frameSeconds", frameSeconds)]
        if let bad = times.first(where: { !($0.1.isFinite && $0.1 >= 0) }) { return "\(name): \(bad.0) must be at least 0" }
        if bytesPerFrame <= 0 { return "\(name): bytesPerFrame must be positive" }
        if !(frameRate.isFinite && frameRate > 0 && frameRate <= 1000) { return "\(name): frameRate must be in (0, 1000]" }
        if let duration, !(duration.isFinite && duration > 0) { return "\(name): duration must be positive" }
        if let sizeBytes, sizeBytes <= 0 { return "\(name): sizeBytes must be positive" }
        return nil
    }
}

/// Costs for a feed: one ``ItemCosts`` per kind of item, cycled over the feed (item `i` costs `items[i % count]`).
///
/// Made by `videofeed simulate calibrate FILES... --out profile.json`, which measures the Media layer on this
/// machine, or written by hand. Without a file PolicyLab uses ``CostProfile/builtIn``.
public struct CostProfile: Sendable, Codable, Equatable {
    /// Format version, 1.
    public var version: Int
    /// Where the numbers come from (machine, date, display size).
    public var source: String
    /// Display box and pixel format the frames were converted to, e.g. `720x1280 bgra`.
    public var display: String
    /// The kinds of item.
    public var items: [ItemCosts]

    /// A profile.
    public init(version: Int = 1, source: String, display: String, items: [ItemCosts]) {
        self.version = version
        self.source = source
        self.display = display
        self.items = items
    }

    /// The default: 1080x1920 H.264 at 30 fps converted to 720x1280 BGRA, as measured by `videofeed simulate
    /// calibrate Fixtures/bench/bench_1080x1920_30s.mp4` on the project's 2-core Linux VM (2026-11-22, the quietest
    /// of four calibrations; see docs/policylab.md). Item durations come from the swipe model.
    public static let builtIn = CostProfile(
        source: "built-in: calibrate on Fixtures/bench/bench_1080x1920_30s.mp4, 2-core Linux VM, 2026-11-22",
        display: "720x1280 bgra",
        items: [ItemCosts(name: "h264-1080x1920-30fps", openSeconds: 0.0088, decoderOpenSeconds: 0.00045,
                          firstFrameSeconds: 0.0301, frameSeconds: 0.0157, bytesPerFrame: 720 * 1280 * 4,
                          frameRate: 30)])

    /// Reads and checks a profile file.
    public static func load(path: String) throws -> CostProfile {
        let data = try InputFile.contents(of: path)
        let profile: CostProfile
        do {
            profile = try JSONDecoder().decode(CostProfile.self, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw PolicyLabError.malformedProfile(path: path, reason: "missing \"\(key.stringValue)\"")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let at = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw PolicyLabError.malformedProfile(path: path, reason: "wrong type at \"\(at)\"")
        } catch {
            throw PolicyLabError.malformedProfile(path: path, reason: "not JSON of the profile's shape")
        }
        try profile.validate(path: path)
        return profile
    }

    /// Throws when the profile cannot be simulated; `path` names it.
    public func validate(path: String) throws {
        guard version == 1 else { throw PolicyLabError.malformedProfile(path: path, reason: "version \(version) is not 1") }
        guard !items.isEmpty else { throw PolicyLabError.malformedProfile(path: path, reason: "no items") }
        if let problem = items.lazy.compactMap({ $0.problem() }).first {
            throw PolicyLabError.malformedProfile(path: path, reason: problem)
        }
    }

    /// The profile as pretty JSON.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
