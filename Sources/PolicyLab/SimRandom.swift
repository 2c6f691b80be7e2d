#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// PolicyLab's seeded random generator (SplitMix64): the same seed gives the same numbers on every machine and
/// every run. The system generator is never used.
public struct SimRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) { state = seed }

    /// A generator for one purpose, derived from `seed` and a `stream` number, so that draws for one purpose
    /// (item durations, swipes) do not shift when another purpose draws more or fewer numbers.
    public init(seed: UInt64, stream: UInt64) {
        var mixer = SimRandom(seed: seed ^ (stream &* 0xD6E8_FEB8_6659_FD93))
        state = mixer.next()
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// Uniform in [lower, upper).
    public mutating func uniform(_ lower: Double, _ upper: Double) -> Double { lower + (upper - lower) * unit() }

    /// An integer in `range`, uniformly.
    public mutating func integer(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// A standard normal draw (Box–Muller).
    public mutating func normal() -> Double {
        let u1 = max(unit(), 0x1.0p-53)
        let u2 = unit()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// A log-normal draw with the given median and spread (the standard deviation of its logarithm).
    public mutating func logNormal(median: Double, spread: Double) -> Double { median * exp(spread * normal()) }
}
