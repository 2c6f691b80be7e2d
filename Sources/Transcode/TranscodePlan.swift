import Foundation
import Media

/// What a transcode of one item will make, worked out from its ``MediaInfo`` and where its video really ends
/// (``VideoEnd``, found by reading packets, no decoding): the size of each rendition, the segment count, whether
/// there is audio. A server can answer a feed listing and write playlists from it before any segment exists;
/// segment *k* covers ``grid``'s `[start(k), start(k + 1))` of the source.
///
/// The duration and the segments come from the stream's real end, never from a header alone: a fragmented MP4
/// whose header says 143,165 s (a duration field of all ones, "unknown") and holds 2.5 s plans 2.5 s.
public struct TranscodePlan: Sendable, Equatable, Codable {
    /// One rung of the ladder as it comes out for this source.
    public struct Rendition: Sendable, Equatable, Codable {
        /// The ladder box it was fitted into, e.g. `720x1280`: the rendition's name in paths and URLs.
        public var name: String
        /// Output size: upright, square pixels, even.
        public var width: Int
        public var height: Int
        /// The VBV cap in bits per second. An AV1 rendition carries its box's H.264 cap but is encoded without one
        /// (``VideoEncoder``).
        public var maxBitrate: Int
        /// The video codec; nil is H.264 (what a plan written before AV1 renditions existed says).
        public var codec: VideoCodec? = nil

        /// The video codec, H.264 unless it says otherwise.
        public var videoCodec: VideoCodec { codec ?? .h264 }

        /// The ladder box it was fitted into, from its name (`720x1280`, `720x1280-av1`).
        public var box: Size? { Size(parsing: String(name.prefix { $0 != "-" })) }

        /// The rendition's name: its box, and the codec after a dash for any but H.264.
        static func name(box: Size, codec: VideoCodec) -> String {
            codec == .h264 ? box.description : box.description + "-" + codec.rawValue
        }
    }

    /// The renditions, largest first; never larger than the source.
    public var renditions: [Rendition]

    /// The indices of the renditions of `codec`, largest first.
    public func renditions(of codec: VideoCodec) -> [Int] {
        renditions.indices.filter { renditions[$0].videoCodec == codec }
    }
    /// The source as shown: upright, square pixels.
    public var displayWidth: Int
    public var displayHeight: Int
    /// Whether the renditions carry an audio track (the source has audio and is no still picture).
    public var hasAudio: Bool
    /// Whether the source is a still picture (photo, cover art): its video lasts ``TranscodeSettings/stillSeconds``.
    /// Judged from the header (an attached picture, an image codec with at most one frame); a stream whose header
    /// does not say so but that holds one picture is made as a video of that one frame.
    public var isStill: Bool
    /// Duration of the renditions in seconds: where the source's video ends (its last picture's end, from
    /// ``VideoEnd``), or the still duration. Only when the end could not be read within its bound is it the header's
    /// claim, held to ``VideoEnd/maxPlausibleSeconds(bytes:)`` of the file's size; 0 when nothing says.
    public var duration: Double
    /// What the container's header claims, in seconds, when it says (`ffprobe`'s duration): for comparison only.
    public var claimedDuration: Double? = nil
    /// Segment length in seconds (every segment but the first).
    public var segmentSeconds: Double
    /// The first segment's length in seconds when it is shorter than the others (nil: as long; a manifest made
    /// before the grid existed reads the same).
    public var firstSegmentSeconds: Double? = nil
    /// When the video's first picture comes, in seconds from the item's start, when that is at or after where the
    /// first segment would end (``VideoEnd/firstKeyStart``: a broadcast capture whose video starts after its audio
    /// and mid-GOP); the first segment then ends ``grid``'s first length after it, so that it holds the first
    /// pictures. Nil otherwise (a plan made before it existed reads the same).
    public var videoLead: Double? = nil
    /// Where each segment begins and ends.
    public var grid: SegmentGrid {
        SegmentGrid(first: firstSegmentSeconds ?? segmentSeconds, seconds: segmentSeconds, lead: videoLead ?? 0)
    }
    /// The video stream transcoded and the audio stream, by container index.
    public var videoStream: Int
    public var audioStream: Int?

    /// When the last video frame starts, in seconds from the start of the item's timeline: the largest time of a
    /// video packet (``VideoEnd/lastStart``), or, when the end could not be read, what the header implies (the video
    /// stream's start, duration and frame rate). A segment that would begin after it has no picture.
    public var lastFrameStart: Double? = nil

    /// Segments of a rendition: those with a frame of the video in them — the segment `lastFrameStart` falls in,
    /// plus one, when the header tells when the last frame starts (a container whose audio outlasts the video says
    /// a longer duration), else as many as cover `duration` — at least 1.
    public var segmentCount: Int {
        let first = grid.end(0)
        var count = duration <= first + 1e-6 ? 1 : ((duration - first) / segmentSeconds - 1e-6).rounded(.up) + 1
        if let last = lastFrameStart, last.isFinite, last >= 0 {
            // The segment the cutter puts the last frame in, by the grid's one rule.
            count = min(count, Double(grid.index(at: last)) + 1)
        }
        return count.isFinite ? max(1, Int(min(count, 1e9))) : 1
    }

    /// The plan for `info` under `settings`, its video ending at `videoEnd` (``MediaFile/videoEnd(stream:)``; nil:
    /// not read, the header alone) in a file of `fileSize` bytes (nil: unknown).
    /// - Throws: ``MediaError`` `noVideoStream` (an audio file without a cover picture), `invalidArgument` for
    ///   settings that cannot work (an empty ladder, a box under 16 pixels, a segment length not in 0.5…60 s).
    ///   A first segment longer than ``TranscodeSettings/segmentSeconds`` is as long as the others.
    public init(info: MediaInfo, settings: TranscodeSettings, item: String, videoEnd: VideoEnd? = nil,
                fileSize: Int? = nil) throws {
        guard !settings.ladder.isEmpty, settings.ladder.allSatisfy({ $0.width >= 16 && $0.height >= 16 }) else {
            throw MediaError(.invalidArgument, operation: "plan", item: item,
                             message: "the ladder needs at least one box, each at least 16x16")
        }
        guard settings.segmentSeconds >= 0.5, settings.segmentSeconds <= 60 else {
            throw MediaError(.invalidArgument, operation: "plan", item: item,
                             message: "segment length \(settings.segmentSeconds) s is not within 0.5…60 s")
        }
        if let first = settings.firstSegmentSeconds, !(first >= 0.5 && first <= 60) {
            throw MediaError(.invalidArgument, operation: "plan", item: item,
                             message: "first segment length \(first) s is not within 0.5…60 s")
        }
        if let problem = TranscodePlan.settingsProblem(settings) {
            throw MediaError(.invalidArgument, operation: "plan", item: item, message: problem)
        }
        guard let video = info.primaryVideoStream else {
            let audio = info.streams.contains { $0.kind == .audio }
            throw MediaError(.noVideoStream, operation: "plan", item: item, message: audio
                ? "an audio-only file without a cover picture has nothing to show in a video feed"
                : "no video stream or picture in \(info.container)")
        }
        videoStream = video.index
        let stillCodecs: Set<String> = ["png", "mjpeg", "webp", "bmp", "tiff", "jpeg2000", "jpegls", "gif_still",
                                        "qoi", "pgm", "ppm", "pam", "pbm", "targa", "sgi", "exr", "dpx"]
        isStill = video.isAttachedPicture || (stillCodecs.contains(video.codec) && (video.frameCount ?? 1) <= 1
            && (info.container.contains("image") || info.container.hasSuffix("_pipe") || video.isAttachedPicture
                || (info.duration ?? 0) <= 0.1))
        let audio = info.streams.first { $0.kind == .audio && $0.sampleRate > 0 && $0.channels > 0 }
        audioStream = isStill ? nil : audio?.index
        hasAudio = audioStream != nil
        let claim = info.duration ?? video.duration
        claimedDuration = claim.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
        if isStill {
            duration = settings.stillSeconds
        } else if let end = videoEnd, end.isComplete {
            // What decodes: the last picture's start and end.
            duration = end.end
            lastFrameStart = end.lastStart
        } else {
            // The header, checked: no longer than the file's bytes can hold, no shorter than the pictures read.
            let size = fileSize ?? videoEnd?.fileSize
            var length = max(0, claimedDuration ?? 0)
            if let size { length = min(length, VideoEnd.maxPlausibleSeconds(bytes: size)) }
            if let end = videoEnd { length = max(length, end.end) }
            duration = length
            if let length = video.duration, let start = video.startTime, let fps = video.averageFrameRate.value,
               fps > 0, fps.isFinite {
                lastFrameStart = max(0, start - info.startTime) + length - 1 / fps
            } else if let length = info.duration, length > 0, let fps = video.averageFrameRate.value, fps > 0,
                      fps.isFinite {
                // The stream does not say (WebM, Matroska): the last frame starts a frame before the item ends, at
                // the latest. (A container duration that runs short only makes the last segment take what follows.)
                lastFrameStart = max(0, length - 1 / fps)
            }
            if let last = lastFrameStart { lastFrameStart = min(last, duration) }
            if let end = videoEnd { lastFrameStart = max(lastFrameStart ?? 0, end.lastStart) }
        }
        segmentSeconds = settings.segmentSeconds
        firstSegmentSeconds = settings.firstSegmentSeconds.flatMap { $0 < settings.segmentSeconds ? $0 : nil }
        if !isStill, let key = videoEnd?.firstKeyStart, key.isFinite,
           key >= SegmentGrid(first: firstSegmentSeconds ?? segmentSeconds, seconds: segmentSeconds).end(0) - 1e-4 {
            // No picture before the first segment's end: it would have none (and the item would fail).
            videoLead = min(key, 1e9)
        }

        let display = TranscodePlan.displaySize(video)
        displayWidth = display.width
        displayHeight = display.height
        let fps = min(video.averageFrameRate.value ?? 30, settings.maxFrameRate)
        var rungs: [Rendition] = []
        for codec in settings.codecs {
            var seen = Set<Size>()
            for box in settings.ladder {
                let size = TranscodePlan.fit(display, in: box)
                guard seen.insert(size).inserted else { continue }
                let rate = Double(size.width * size.height) * settings.maxBitsPerPixel * max(1, min(fps, 60) / 30)
                rungs.append(Rendition(name: Rendition.name(box: box, codec: codec), width: size.width,
                                       height: size.height, maxBitrate: Int(rate),
                                       codec: codec == .h264 ? nil : codec))
            }
        }
        renditions = rungs
    }


    /// Why `settings` cannot work, or nil: each number within what its filter or encoder takes.
    static func settingsProblem(_ s: TranscodeSettings) -> String? {
        if s.codecs.first != .h264 || Set(s.codecs).count != s.codecs.count {
            return "the codecs must start with h264 and name each codec once"
        }
        if !(0...63).contains(s.av1.crf) { return "AV1 crf \(s.av1.crf) is not within 0…63" }
        if !(0...13).contains(s.av1.preset) { return "AV1 preset \(s.av1.preset) is not within 0…13" }
        if !(0...51).contains(s.video.crf) { return "crf \(s.video.crf) is not within 0…51" }
        if !VideoEncoding.presets.contains(s.video.preset) { return "'\(s.video.preset)' is no x264 preset" }
        if !["baseline", "main", "high"].contains(s.video.profile) { return "'\(s.video.profile)' is no H.264 profile" }
        if !(s.maxFrameRate >= 1 && s.maxFrameRate <= 240) { return "frame-rate cap \(s.maxFrameRate) is not within 1…240" }
        if !(1...240).contains(s.stillFrameRate) { return "still frame rate \(s.stillFrameRate) is not within 1…240" }
        if !(s.stillSeconds >= 0.1 && s.stillSeconds <= 60) { return "still length \(s.stillSeconds) s is not within 0.1…60 s" }
        if !(16_000...512_000).contains(s.audioBitrate) { return "audio bit rate \(s.audioBitrate) is not within 16…512 kb/s" }
        if !(s.maxBitsPerPixel > 0 && s.maxBitsPerPixel <= 100) { return "max bits per pixel \(s.maxBitsPerPixel) is not within 0…100" }
        if !(0...64).contains(s.threads) || !(0...64).contains(s.video.threads) || !(0...64).contains(s.filterThreads) {
            return "threads must be within 0…64"
        }
        if let p = s.preview {
            if !(p.seconds > 0 && p.seconds <= 60) { return "preview length \(p.seconds) s is not within 0…60 s" }
            if !(1...60).contains(p.webpFrameRate) { return "preview frame rate \(p.webpFrameRate) is not within 1…60" }
            if !(0...100).contains(p.webpQuality) { return "preview quality \(p.webpQuality) is not within 0…100" }
            if p.box.width < 16 || p.box.height < 16 { return "the preview box must be at least 16x16" }
        }
        if s.ladder.contains(where: { $0.width > 8192 || $0.height > 8192 }) { return "a ladder box is over 8192 per side" }
        return nil
    }

    /// The picture as a player shows it: the sample aspect ratio applied to the width, then the rotation.
    static func displaySize(_ s: StreamInfo) -> Size {
        displaySize(width: s.width, height: s.height, sampleAspectRatio: s.sampleAspectRatio, orientation: s.orientation)
    }

    static func displaySize(width storedWidth: Int, height storedHeight: Int, sampleAspectRatio: Rational,
                            orientation: Orientation) -> Size {
        var width = Double(max(storedWidth, 1))
        let height = Double(max(storedHeight, 1))
        if let sar = sampleAspectRatio.value, sar > 0, sar.isFinite, abs(sar - 1) > 1e-6 {
            width *= min(max(sar, 0.1), 10)
        }
        let w = max(1, Int(width.rounded())), h = max(1, Int(height))
        return orientation.swapsAxes ? Size(width: h, height: w) : Size(width: w, height: h)
    }

    /// `size` fitted inside `box` keeping its aspect ratio, never enlarged, both sides even and at least 2.
    static func fit(_ size: Size, in box: Size) -> Size {
        let scale = min(Double(box.width) / Double(size.width), Double(box.height) / Double(size.height), 1)
        // At scale 1 round down: an odd source side loses a pixel rather than gaining one.
        func even(_ v: Double) -> Int { max(2, Int((v / 2).rounded(scale >= 1 ? .down : .toNearestOrAwayFromZero)) * 2) }
        var w = even(Double(size.width) * scale), h = even(Double(size.height) * scale)
        // Rounding up may cross the box by one step.
        if w > box.width { w -= 2 }
        if h > box.height { h -= 2 }
        return Size(width: max(2, w), height: max(2, h))
    }
}

/// Where a rendition's segments begin: the first lasts ``first`` seconds (from ``lead``, when the video starts
/// that late: the first also holds what comes before), every later one ``seconds``, so segment *k* ≥ 1 covers
/// `[lead + first + (k − 1)·seconds, lead + first + k·seconds)` of the source.
///
/// A short first segment is made (and fetched) sooner: a viewer who lands on an item nobody prepared waits for
/// segment 0 alone, so its length sets the cold start; the later segments, made while it plays, keep the longer
/// length (fewer keyframes and requests). With `first == seconds` the grid is the plain `k·s`.
public struct SegmentGrid: Sendable, Equatable {
    /// The first segment's length in seconds.
    public var first: Double
    /// Every later segment's length in seconds.
    public var seconds: Double
    /// Where the first segment's length is counted from (when the video starts; 0 but for a video whose first
    /// picture comes after `first`): segment 0 covers `[0, lead + first)`.
    public var lead: Double = 0

    /// The grid of segments `seconds` long after a first one `first` long (at most `seconds`) from `lead`.
    public init(first: Double, seconds: Double, lead: Double = 0) {
        self.seconds = seconds
        self.first = min(first, seconds)
        self.lead = lead.isFinite ? max(0, lead) : 0
    }

    /// When segment `k` begins, in seconds from the item's start (0 for `k ≤ 0`).
    public func start(_ k: Int) -> Double { k <= 0 ? 0 : lead + first + Double(k - 1) * seconds }

    /// When segment `k` ends: where segment `k + 1` begins.
    public func end(_ k: Int) -> Double { start(k + 1) }

    /// The segment `time` falls in (a time within 0.1 ms before a boundary counts as after it; a time before the
    /// start is in segment 0), clamped so that a hostile timestamp cannot trap.
    public func index(at time: Double) -> Int {
        let t = time + 1e-4
        guard t >= lead + first else { return 0 }
        let value = ((t - lead - first) / seconds).rounded(.down) + 1
        guard value.isFinite else { return 0 }
        return Int(min(max(value, 0), 1e12))
    }
}
