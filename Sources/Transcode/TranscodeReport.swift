import Foundation
import Media

/// What ``Transcoder/run(into:)`` made for one item; every path is relative to the folder it was given.
public struct TranscodeReport: Sendable, Equatable, Codable {
    /// One rendition's outputs.
    public struct Rendition: Sendable, Equatable, Codable {
        /// The ladder box's name, e.g. `720x1280`.
        public var name: String
        public var width: Int
        public var height: Int
        /// The fast-start MP4, when made.
        public var mp4: String?
        /// The HLS media playlist, the CMAF initialisation segment and the media segments, when made.
        public var playlist: String?
        public var initSegment: String?
        public var segments: [String]
        /// Each segment's duration in seconds (the playlist's `EXTINF`).
        public var segmentDurations: [Double]
        /// Peak bit rate of a segment (HLS `BANDWIDTH`) and the average over the whole rendition, in bits per
        /// second, audio included.
        public var bandwidth: Int
        public var averageBandwidth: Int
        /// Duration in seconds, first frame to the end of the last.
        public var duration: Double
        /// Video frames encoded.
        public var frames: Int
        /// The MSE / HLS codec string, e.g. `avc1.64001f,mp4a.40.2`.
        public var codecs: String
    }

    public var renditions: [Rendition]
    /// The HLS multivariant playlist naming every rendition's media playlist, when segments were made.
    public var masterPlaylist: String?
    /// The card preview, when made.
    public var previewMP4: String?
    public var previewWebP: String?
    /// Whether the renditions have an audio track.
    public var hasAudio: Bool
    /// Whether the source was made into a video from one picture.
    public var wasStill: Bool
    /// Whether frames were deinterlaced (`bwdif`) and HDR tone-mapped to SDR.
    public var deinterlaced: Bool
    public var toneMapped: Bool
    /// Video frames decoded from the source.
    public var sourceFrames: Int
}

/// One media segment made on demand (``Transcoder/segments(_:renditions:origin:)``).
public struct TranscodedSegment: Sendable, Equatable {
    /// Segment number: it covers `[index·s, (index+1)·s)` of the source.
    public var index: Int
    /// The CMAF initialisation segment (`ftyp` + `moov`) these bytes play with; the same bytes for every segment
    /// of a rendition with the same settings.
    public var initialization: [UInt8]
    /// The media segment (`styp`/`sidx` + `moof` + `mdat`).
    public var media: [UInt8]
    /// Start and duration of its video in seconds.
    public var start: Double
    public var duration: Double
    /// Video frames in it.
    public var frames: Int
    /// The MSE / HLS codec string.
    public var codecs: String
}

/// What a pass from an item's start learns and every later segment of the item is made with: the first picture as
/// shown (every segment's renditions are fitted from it) and each rendition's first picture time (the media
/// timeline the later segments are muxed onto), from ``Transcoder/origin``. Kept beside an item's manifest, it lets
/// ``Transcoder/segments(_:renditions:origin:)`` make a later segment without that pass.
public struct TranscodeOrigin: Sendable, Codable, Equatable {
    /// The item's first picture as shown (its size with its sample aspect ratio and orientation).
    public var display: Size
    /// Each rendition's first picture time, in its encoder's time base, by rendition name.
    public var firstPictureTimes: [String: Int64]

    /// An origin of `display` and `firstPictureTimes`.
    public init(display: Size, firstPictureTimes: [String: Int64]) {
        self.display = display
        self.firstPictureTimes = firstPictureTimes
    }
}
