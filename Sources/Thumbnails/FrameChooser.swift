import Media

/// Picks the most representative frame of a video the way FFmpeg's `thumbnail` filter does, at a fraction of its
/// cost: candidates are keyframes only, sampled at the middles of ``candidateCount`` equal spans; black and
/// near-uniform candidates (``LumaStatistics/isBlank``) are dropped, and of the rest the one whose luma histogram is
/// closest to the candidates' average wins. When every keyframe is blank (a long black opening before the first
/// cut), the same times are tried again with exact, non-key frames. When those are blank too, the candidate with
/// the most detail is used and the result is flagged ``Choice/blank``.
struct FrameChooser {
    /// Candidates sampled across the item.
    static let candidateCount = 8

    /// One evaluated candidate.
    struct Candidate {
        var image: Image
        var time: Double?
        var stats: LumaStatistics
    }

    /// The chosen candidate and whether it is blank.
    struct Choice {
        var candidate: Candidate
        var blank: Bool
    }

    /// Picks among `candidates`; nil when there are none.
    static func choose(_ candidates: [Candidate]) -> Choice? {
        let usable = candidates.filter { !$0.stats.isBlank }
        if usable.isEmpty {
            guard let best = candidates.max(by: { $0.stats.spread + $0.stats.mean < $1.stats.spread + $1.stats.mean })
            else { return nil }
            return Choice(candidate: best, blank: true)
        }
        let average = LumaStatistics.averageHistogram(usable.map(\.stats))
        let best = usable.min { $0.stats.distance(to: average) < $1.stats.distance(to: average) }!
        return Choice(candidate: best, blank: false)
    }

    /// The sample times for an item of `duration` seconds.
    static func sampleTimes(duration: Double) -> [Double] {
        (0..<candidateCount).map { (Double($0) + 0.5) / Double(candidateCount) * duration }
    }
}
