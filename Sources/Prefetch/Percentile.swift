/// The nearest-rank percentile: the smallest value with at least `p` of the values at or below it. FeedPlayer's
/// metrics and PolicyLab's use this one definition, so their time-to-first-frame percentiles compare.
public enum Percentile {
    /// The nearest-rank `p` percentile (0…1) of `sorted` (ascending); 0 for no values.
    public static func nearestRank(_ p: Double, of sorted: [Double]) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}
