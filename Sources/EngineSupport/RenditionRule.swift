/// The one rule for which rendition a viewer's box gets, wherever it is chosen: the server (`ItemManifest`), the
/// serving simulation (PolicyLab), a listing's files for a display (Feed's `VideoRendition.bestFit`), and the page
/// (`pickRendition` in FeedServer's `Web/util.js`, which mirrors it; `Fixtures/rendition-rule.json` holds the cases
/// both are checked against: `RenditionRuleTests` here, the `rendition-rule` check of `scripts/serve-browser-test.py`
/// in the page).
public enum RenditionRule {
    /// A rendition as the rule sees it.
    public struct Candidate: Sendable, Hashable {
        /// Its size in pixels.
        public var width: Int
        public var height: Int
        /// Its peak bits per second (video and audio); nil or 0: unknown, which fits any network.
        public var bitrate: Int?

        /// A candidate of `width`×`height` pixels and `bitrate` bits per second.
        public init(width: Int, height: Int, bitrate: Int? = nil) {
            self.width = width
            self.height = height
            self.bitrate = bitrate
        }

        var area: Int { width * height }
    }

    /// The index of the rendition for a `width`×`height` box: the smallest (by area) that is at least as wide or as
    /// tall as the box, else the largest; among equal areas the earlier. Nil when there are none.
    public static func forBox(_ candidates: [Candidate], width: Int, height: Int) -> Int? {
        let covering = candidates.indices.filter { candidates[$0].width >= width || candidates[$0].height >= height }
        if let smallest = covering.min(by: { candidates[$0].area < candidates[$1].area }) { return smallest }
        // `min(by:)` and `max(by:)` both keep the first of equal elements: the earlier.
        return candidates.indices.max { candidates[$0].area < candidates[$1].area }
    }

    /// The index of the rendition for a `width`×`height` box on a network that affords `bandwidth` bits per second:
    /// among the box's rendition (``forBox(_:width:height:)``) and the smaller ones, largest first (equal areas in
    /// their order), the first whose bitrate fits, else the last. Without a bandwidth, the box's rendition.
    public static func forBox(_ candidates: [Candidate], width: Int, height: Int, within bandwidth: Int?) -> Int? {
        guard let box = forBox(candidates, width: width, height: height) else { return nil }
        guard let bandwidth else { return box }
        let limit = candidates[box].area
        // A stable sort, largest first: equal areas keep their order.
        let below = candidates.indices.filter { candidates[$0].area <= limit }
            .enumerated().sorted { a, b in
                let (x, y) = (candidates[a.element].area, candidates[b.element].area)
                return x != y ? x > y : a.offset < b.offset
            }.map(\.element)
        return below.first { index in
            let bitrate = candidates[index].bitrate ?? 0
            return bitrate <= 0 || bitrate <= bandwidth
        } ?? below.last
    }
}
