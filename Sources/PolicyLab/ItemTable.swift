/// Per item of the feed, the numbers the hot path needs, unpacked from the profile once.
struct ItemTable {
    var frameBytes: [Int] = []
    var frameDuration: [Double] = []
    var frameSeconds: [Double] = []
    var firstFrameSeconds: [Double] = []
    var openSeconds: [Double] = []
    var decoderOpenSeconds: [Double] = []
    var frameRate: [Double] = []
    var framesPerLoop: [Int] = []
    /// Which kind of item (profile entry) each item is, and for each kind the seconds held by `n` buffered frames,
    /// summed one frame at a time as the live scheduler sums its buffer (so comparisons with targets agree exactly):
    /// kind `k`'s sums are `bufferedSeconds[start[k] ..< start[k + 1]]`, precomputed for as many frames as the
    /// budget can hold (a count the budget allows), at most 65,536; beyond, they are summed on demand.
    var kind: [Int] = []
    private var bufferedSeconds: [Double] = []
    private var start: [Int] = []
    private var kindFrameDuration: [Double] = []

    init(items: FeedItems, costs: CostProfile, budget: Int) {
        for i in items.duration.indices {
            let c = costs.items[items.costIndex[i]]
            frameBytes.append(c.bytesPerFrame)
            frameDuration.append(1 / c.frameRate)
            frameSeconds.append(c.frameSeconds)
            firstFrameSeconds.append(c.firstFrameSeconds)
            openSeconds.append(c.openSeconds)
            decoderOpenSeconds.append(c.decoderOpenSeconds)
            frameRate.append(c.frameRate)
            framesPerLoop.append(max(1, Int((items.duration[i] * c.frameRate).rounded())))
            kind.append(items.costIndex[i])
        }
        for c in costs.items {
            let d = 1 / c.frameRate
            let count = min(budget / max(c.bytesPerFrame, 1), 1 << 16) + 1
            start.append(bufferedSeconds.count)
            kindFrameDuration.append(d)
            var sum = 0.0
            bufferedSeconds.append(sum)
            for _ in 0..<count {
                sum += d
                bufferedSeconds.append(sum)
            }
        }
        start.append(bufferedSeconds.count)
    }

    /// Seconds of `count` buffered frames of item `index`.
    @inline(__always)
    func seconds(_ count: Int, of index: Int) -> Double {
        let k = kind[index]
        let i = start[k] + count
        if i < start[k + 1] { return bufferedSeconds[i] }
        var sum = bufferedSeconds[start[k + 1] - 1]
        for _ in start[k + 1] - 1 - start[k] ..< count { sum += kindFrameDuration[k] }
        return sum
    }
}
