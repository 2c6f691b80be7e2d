import Prefetch
import Testing

@Suite struct PercentileTests {
    @Test("nearest rank: the smallest value with at least p of the values at or below it; 0 for none")
    func nearestRank() {
        let values = (1...20).map(Double.init)
        #expect(Percentile.nearestRank(0.50, of: values) == 10)
        #expect(Percentile.nearestRank(0.95, of: values) == 19)
        #expect(Percentile.nearestRank(0.99, of: values) == 20)
        #expect(Percentile.nearestRank(0, of: values) == 1)
        #expect(Percentile.nearestRank(0.5, of: [7]) == 7)
        #expect(Percentile.nearestRank(0.5, of: []) == 0)
    }
}
