import EngineSupport
import Foundation

/// One file of a video offered at a given size, as a Pexels `video_files` entry.
public struct VideoRendition: Sendable, Hashable {
    /// Where the file is.
    public var link: URL
    /// Width in pixels, when the listing states it (adaptive streams often do not).
    public var width: Int?
    /// Height in pixels, when the listing states it.
    public var height: Int?
    /// The listing's quality label (`hd`, `sd`, `uhd`, `hls`), informative only.
    public var quality: String?
    /// The MIME type, e.g. `video/mp4`.
    public var fileType: String?

    /// Creates a rendition.
    public init(link: URL, width: Int?, height: Int?, quality: String? = nil, fileType: String? = nil) {
        self.link = link
        self.width = width
        self.height = height
        self.quality = quality
        self.fileType = fileType
    }

    /// The rendition that best fits `display` when shown aspect-fit (letterboxed, never cropped):
    ///
    /// 1. among renditions with a known size that are at least as detailed as the display needs (shown at scale ≤ 1),
    ///    the one with the fewest pixels — no upscaling, no wasted bytes;
    /// 2. otherwise, the one with the most pixels (the least upscaling);
    /// 3. renditions without a size only when no rendition has one.
    ///
    /// Ties go to `video/mp4`, then to the earlier rendition. `nil` when `renditions` is empty.
    public static func bestFit(_ renditions: [VideoRendition], for display: DisplaySize) -> VideoRendition? {
        // MP4 first, otherwise in their order: the rule's ties go to the earlier.
        let sized = renditions.filter { ($0.width ?? 0) > 0 && ($0.height ?? 0) > 0 }.enumerated()
            .sorted { a, b in a.element.isMP4 != b.element.isMP4 ? a.element.isMP4 : a.offset < b.offset }
            .map(\.element)
        guard !sized.isEmpty else { return renditions.first(where: \.isMP4) ?? renditions.first }
        // Shown aspect-fit, a rendition needs no upscaling when it is at least as wide or as tall as the display.
        let candidates = sized.map { RenditionRule.Candidate(width: $0.width ?? 0, height: $0.height ?? 0) }
        return RenditionRule.forBox(candidates, width: display.width, height: display.height).map { sized[$0] }
    }

    private var isMP4: Bool { fileType?.lowercased() == "video/mp4" }
}
