import Media

/// Brightness facts about a picture, computed in Swift from an ``Image`` in `.rgb24` or `.gray`: the mean and
/// standard deviation of luma (BT.601 weights, 0…255) and a normalised 32-bin luma histogram.
public struct LumaStatistics: Sendable, Equatable {
    /// Bins of ``histogram``.
    public static let binCount = 32

    /// Mean luma, 0…255.
    public let mean: Double
    /// Standard deviation of luma: how much the picture varies. Near 0 for a flat colour.
    public let spread: Double
    /// Fraction of pixels per luma bin; sums to 1.
    public let histogram: [Double]

    /// Statistics of `image`, sampling at most about 16 384 pixels evenly.
    /// - Precondition: `image.pixelFormat` is `.rgb24` or `.gray`.
    public init(_ image: Image) {
        precondition(image.pixelFormat == .rgb24 || image.pixelFormat == .gray, "rgb24 or gray only")
        let bpp = image.pixelFormat.bytesPerPixel
        let pixels = image.width * image.height
        let step = max(1, pixels / 16_384)
        var bins = [Int](repeating: 0, count: Self.binCount)
        var sum = 0.0, sumSquares = 0.0, n = 0
        image.bytes.withUnsafeBufferPointer { bytes in
            var p = 0
            while p < pixels {
                let o = p * bpp
                let y: Double = bpp == 1 ? Double(bytes[o])
                    : 0.299 * Double(bytes[o]) + 0.587 * Double(bytes[o + 1]) + 0.114 * Double(bytes[o + 2])
                sum += y
                sumSquares += y * y
                bins[min(Self.binCount - 1, Int(y) * Self.binCount / 256)] += 1
                n += 1
                p += step
            }
        }
        let mean = sum / Double(n)
        self.mean = mean
        self.spread = max(0, sumSquares / Double(n) - mean * mean).squareRoot()
        self.histogram = bins.map { Double($0) / Double(n) }
    }

    /// Whether the picture is black or nearly one flat colour: mean luma under 20, or a spread under 8.
    public var isBlank: Bool { mean < 20 || spread < 8 }

    /// Sum of squared differences between this histogram and `other`.
    public func distance(to other: [Double]) -> Double {
        zip(histogram, other).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }
    }

    /// The bin-wise mean of several histograms.
    public static func averageHistogram(_ all: [LumaStatistics]) -> [Double] {
        guard !all.isEmpty else { return [Double](repeating: 0, count: binCount) }
        var sum = [Double](repeating: 0, count: binCount)
        for s in all { for i in 0..<binCount { sum[i] += s.histogram[i] } }
        return sum.map { $0 / Double(all.count) }
    }
}
