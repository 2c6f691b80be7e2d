import Foundation
import Media

/// What a transcode makes of an upload: the feed renditions (a ladder of boxes), their segmenting, the picture
/// processing and the card preview. The defaults are the feed rendition of docs/transcode.md: H.264 High 8-bit SDR
/// BT.709, upright, square pixels, fitted in 720x1280, 540x960 and 360x640 (never upscaled), a keyframe at every 2 s
/// segment boundary, `-crf 23 -preset veryfast` with a max-rate cap, AAC-LC stereo 128 kb/s.
public struct TranscodeSettings: Sendable, Hashable, Codable {
    /// The boxes the renditions are fitted into, largest first. Rungs that come out the same size as a larger one
    /// (a small source) are made once.
    public var ladder: [Size] = [Size(width: 720, height: 1280), Size(width: 540, height: 960),
                                 Size(width: 360, height: 640)]
    /// Segment length in seconds (after the first, ``firstSegmentSeconds``): a keyframe is forced at every
    /// boundary of the plan's ``SegmentGrid``, so segment *k* always covers the same span of the source, whoever
    /// makes it.
    public var segmentSeconds: Double = 2
    /// The first segment's length in seconds, 0.5–60 (at most ``segmentSeconds``; nil: as long as the others):
    /// what a viewer landing on a cold item waits for, so 1 s by default (see ``SegmentGrid``).
    public var firstSegmentSeconds: Double? = 1
    /// The video codecs of the renditions, each making a rendition for every box of the ladder: H.264 always
    /// first, which every browser and phone plays; AV1 (`.av1`) beside it for the clients that decode it.
    public var codecs: [VideoCodec] = [.h264]
    /// The H.264 encoder settings.
    public var video = VideoEncoding()
    /// The AV1 encoder settings, for ``codecs`` holding `.av1`.
    public var av1 = AV1Encoding()
    /// The VBV cap in bits per second per pixel of a rendition at 30 fps: 3.3 gives 3.0 Mb/s for 720x1280,
    /// 1.7 Mb/s for 540x960, 0.76 Mb/s for 360x640. Scaled with the frame rate up to 60 fps.
    public var maxBitsPerPixel: Double = 3.3
    /// Frame-rate cap: a source more than 5 % above it gets libavfilter's `fps` filter; others keep their own timing.
    public var maxFrameRate: Double = 60
    /// AAC bit rate in bits per second.
    public var audioBitrate: Int = 128_000
    /// How long a still picture (a photo, cover art, a one-frame GIF) lasts as a video, in seconds.
    public var stillSeconds: Double = 3
    /// Frame rate of a still picture's video.
    public var stillFrameRate: Int = 30
    /// Brightness, contrast and saturation (libavfilter's `eq`); the identity by default.
    public var adjustment = PictureAdjustment()
    /// Tone-map HDR (PQ, HLG) to SDR BT.709 with `zscale` + `tonemap` (Hable), as the usual ffmpeg recipe does.
    public var toneMapsHDR = true
    /// Deinterlace frames flagged interlaced with `bwdif` (progressive frames pass untouched).
    public var deinterlaces = true
    /// The card preview, or nil for none.
    public var preview: PreviewSettings? = PreviewSettings()
    /// Make the fast-start MP4 of each rendition.
    public var makesMP4 = true
    /// Make the CMAF segments and HLS playlists of each rendition.
    public var makesSegments = true
    /// Threads for the decoder (0: FFmpeg chooses); the output is the same with any. A batch running as many items
    /// as cores runs best with 1 here.
    public var threads: Int = 0
    /// libavfilter's threads (slices of scaling, deinterlacing, tone mapping). Slices change the output (a dither or a
    /// filter's edge handling restarts at each slice), so the count is fixed, not the machine's, as
    /// ``VideoEncoding/threads`` is: every machine makes the same bytes. Part of the fingerprint. One by default:
    /// the decoder has its own threads and a batch or a server runs one item per core, and on 2 cores four slices
    /// cost a 4K source's segment 45 % more CPU (and wall time) than one.
    public var filterThreads: Int = 1

    /// The defaults described on each property.
    public init() {}

    /// A short stable digest of every setting that changes the output: outputs made with other settings are redone.
    /// The decoder's thread count is left out (decoding is exact with any); x264's is in (``VideoEncoding/threads``
    /// changes the bitstream).
    /// The pipeline's own version (``recipe``) is in it too, so outputs an older build made differently are redone.
    public var fingerprint: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var essential = self
        essential.threads = 0
        let data = (try? encoder.encode(essential)) ?? Data()
        return String(format: "%016llx", StableDigest.fnv1a(data + Array("|recipe \(Self.recipe)".utf8)))
    }

    /// Bumped whenever the code makes other bytes from the same settings (a filter moved, a timing rule changed):
    /// a cache or a batch folder made by an older build is then out of date rather than mixed with new outputs.
    /// 2: tone mapping at each rendition's size, after its resize (was at the source's size, before the split).
    /// 3: x264 held to its AVX2 code on a CPU with AVX-512 (`asm=AVX2`), whose AVX-512 code made bytes that followed
    /// uninitialised memory; the same bytes as before on other CPUs.
    /// 4: the duration and the segment list from where the video really ends (``VideoEnd``), not from the header
    /// alone: a listing or manifest made by an older build may list segments past the end.
    /// 5: an untagged HD source is read as BT.709 (``UntaggedColour``), no longer converted from BT.601.
    /// 6: an HDR item's poster is tone-mapped by the renditions' own curve (``ToneMap``), no longer by a Swift one:
    /// `serve` keeps posters in these folders. A batch's renditions are the same bytes as under 5, but its folders
    /// are named anew, so a batch made by an older build is redone once.
    /// 7: x264's one algorithm on every CPU (`cpu-independent`,
    /// ``VideoEncoder/x264Parameters(instructionSets:canonical:)``) in place of 3's AVX2 cap: every H.264 rendition's
    /// bytes change, and are then the same on any CPU.
    public static let recipe = 7
}

/// libavfilter's `eq`: brightness −1…1 (0 unchanged), contrast −1000…1000 (1 unchanged), saturation 0…3
/// (1 unchanged).
public struct PictureAdjustment: Sendable, Hashable, Codable {
    public var brightness: Double = 0
    public var contrast: Double = 1
    public var saturation: Double = 1

    public init(brightness: Double = 0, contrast: Double = 1, saturation: Double = 1) {
        self.brightness = brightness
        self.contrast = contrast
        self.saturation = saturation
    }

    /// Whether this changes nothing.
    public var isIdentity: Bool { brightness == 0 && contrast == 1 && saturation == 1 }
}

/// The preview clip of a feed card: the first seconds, small and muted, as an MP4 and as an animated WebP.
public struct PreviewSettings: Sendable, Hashable, Codable {
    /// Length in seconds.
    public var seconds: Double = 3
    /// The box the preview is fitted into.
    public var box = Size(width: 360, height: 640)
    /// Frame rate of the WebP animation (the MP4 keeps the source's, up to the cap).
    public var webpFrameRate: Int = 15
    /// WebP quality 0–100.
    public var webpQuality: Int = 60

    public init(seconds: Double = 3, box: Size = Size(width: 360, height: 640), webpFrameRate: Int = 15,
                webpQuality: Int = 60) {
        self.seconds = seconds
        self.box = box
        self.webpFrameRate = webpFrameRate
        self.webpQuality = webpQuality
    }
}

/// FNV-1a over bytes (the Feed module's `StableHash` works on strings; Media does not depend on Feed).
enum StableDigest {
    static func fnv1a(_ data: Data) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}
