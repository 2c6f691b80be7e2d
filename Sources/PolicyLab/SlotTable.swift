/// The simulation's slots by item index: a handful of entries (the wanted set plus slots whose cancelled job has not
/// returned), so a linear scan of two small arrays beats hashing on the hot path.
struct SlotTable {
    private(set) var keys: [Int] = []
    private(set) var values: [SimSlot] = []
    /// Changes whenever a slot is added or removed (memoized answers about the set of slots check it).
    private(set) var version = 0

    subscript(index: Int) -> SimSlot? {
        get {
            for i in keys.indices where keys[i] == index { return values[i] }
            return nil
        }
        set {
            if let i = keys.firstIndex(of: index) {
                if let newValue { values[i] = newValue } else {
                    keys.remove(at: i)
                    values.remove(at: i)
                    version += 1
                }
            } else if let newValue {
                keys.append(index)
                values.append(newValue)
                version += 1
            }
        }
    }
}

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
    /// summed one frame at a time as the live scheduler sums its buffer (so comparisons with targets agree exactly).
    var kind: [Int] = []
    private var bufferedSeconds: [[Double]] = []

    init(items: FeedItems, costs: CostProfile) {
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
        bufferedSeconds = costs.items.map { _ in [0] }
    }

    /// Seconds of `count` buffered frames of item `index`.
    mutating func seconds(_ count: Int, of index: Int) -> Double {
        let k = kind[index]
        while bufferedSeconds[k].count <= count {
            bufferedSeconds[k].append(bufferedSeconds[k].last! + frameDuration[index])
        }
        return bufferedSeconds[k][count]
    }
}
