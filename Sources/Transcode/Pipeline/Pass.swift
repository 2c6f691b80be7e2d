import Foundation
import Media

/// What one pass of the decode → filter → encode → mux chain makes, over which span of the item, and where its
/// pictures come from: the value each ``Transcoder`` operation hands its ``Pipeline`` (FFmpeg's
/// doc/examples/transcode.c runs one such pass over a whole file).
struct Pass {
    /// The span of the source a pass covers, in seconds from the item's start, and the segment it is.
    struct Window {
        let start: Double
        let end: Double
        let index: Int
    }

    /// What the pass makes.
    enum Product {
        /// Segment `window.index` of each rendition in `rungs` (indices into the plan), in that order; with a
        /// batch, their packets also go into its renditions' MP4s.
        case segments(rungs: [Int], batch: BatchFiles?)
        /// The initialisation segment of rendition `rung`, from the item's first few frames.
        case initialization(rung: Int)
        /// The card previews (MP4 and animated WebP), written into `folder`.
        case previews(folder: URL)
    }

    /// Where the pass's pictures come from.
    enum Source {
        /// A seek to the keyframe before the window (none for a window at the item's start, or a still); when
        /// the first picture decoded is past the window's start the pass throws ``Pipeline/LandedPastWindow``.
        case seek
        /// The item's first packet, read on to the window (the caller rewound the file).
        case itemStart
        /// A batch's video decoder that carried on from the window before (``ContinuousVideo``); the audio still
        /// seeks, so it starts where a segment alone reads it.
        case continuing(ContinuousVideo)
    }

    let product: Product
    let window: Window
    let source: Source

    /// The renditions the pass encodes (indices into the plan), in the order its segments are returned.
    var rungs: [Int] {
        switch product {
        case .segments(let rungs, _): rungs
        case .initialization(let rung): [rung]
        case .previews: []
        }
    }

    /// Whether the pass makes an initialisation segment, from the first few frames only.
    var isInitialization: Bool {
        if case .initialization = product { return true }
        return false
    }

    /// The batch whose MP4s the segments' packets also go into.
    var batch: BatchFiles? {
        if case .segments(_, let batch) = product { return batch }
        return nil
    }

    /// Where the previews go, for a preview pass.
    var previewFolder: URL? {
        if case .previews(let folder) = product { return folder }
        return nil
    }

    /// The decoder that carried on from the window before, when the pictures come from one.
    var continuous: ContinuousVideo? {
        if case .continuing(let decoder) = source { return decoder }
        return nil
    }

    /// Whether the pass reads from the item's first packet instead of seeking.
    var readsFromStart: Bool {
        if case .itemStart = source { return true }
        return false
    }
}

/// What a transcoder's passes learn about the item and hand on to the passes after them: the first picture as
/// shown (every segment is fitted from it), each rendition's first picture time (later segments are muxed onto the
/// timeline that starts there), the pictures each encoder was opened for, and a still's one picture. One per
/// ``Transcoder``, shared with each of its pipelines in turn (one call at a time, like the transcoder).
final class ItemMemory {
    /// A still's one picture once decoded: image demuxers cannot always seek back to it.
    var stillPicture: Frame? = nil
    /// The item's first picture as shown (its size with its sample aspect ratio and orientation), learnt by the
    /// first pass that starts at the beginning: every segment's renditions are fitted from it, so that a stream
    /// changing size midway keeps one output size in every segment, made alone or in a batch.
    var itemDisplay: Size? = nil
    /// Each rendition's first picture time (in its encoder's time base), learnt like `itemDisplay`: the media
    /// timeline that segments after the first are muxed onto starts there (`Pipeline.fragmentShift`).
    var firstPictureTime: [String: Int64] = [:]
    /// The pictures each rendition's encoder was opened for (size, and frames a second), by rendition name.
    var encodedPictures: [String: (width: Int, height: Int, frameRate: Double)] = [:]
    /// Whether a window's preroll skips the pictures nothing refers to (`Pipeline.skipsPreroll`); off only in
    /// tests, which compare the bytes made both ways.
    var skipsPreroll = true
}
