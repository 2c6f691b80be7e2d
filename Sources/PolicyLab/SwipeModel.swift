/// A built-in model of how viewers swipe, with named presets and every parameter adjustable.
///
/// For each item the viewer watches (counted from the moment its first frame is on screen):
/// - with probability ``quickLeave`` they leave within ``quickSeconds`` (uniformly);
/// - with probability ``watchToEnd`` they watch the whole item (its duration);
/// - otherwise they leave uniformly between ``quickSeconds`` and the end.
///
/// On top of that, each swipe starts a fast-scroll burst with probability ``burstRate``: the next
/// ``burstLength`` items are each watched a time drawn uniformly from ``burstWatch``. Each swipe goes back to the
/// previous item with probability ``backRate`` (never from the first item), jumps to an item drawn uniformly from the
/// feed with probability ``jumpRate`` (a search result, a shared link), otherwise goes forward. Item durations are
/// log-normal around ``medianDuration`` with spread ``durationSpread`` (the standard deviation of their logarithm),
/// clamped to ``durationRange``.
public struct SwipeModel: Sendable, Equatable, CustomStringConvertible {
    /// The preset's name (`mixed`, `patient`, `scroller`), or `custom`.
    public var name: String
    /// Share of items left within ``quickSeconds``. Default 0.16.
    public var quickLeave: Double
    /// What "quickly" means, in seconds. Default 2.
    public var quickSeconds: Double
    /// Share of items watched to the end. Default 0.40.
    public var watchToEnd: Double
    /// Median item duration in seconds. Default 15.
    public var medianDuration: Double
    /// Spread of item durations (standard deviation of the logarithm). Default 0.5.
    public var durationSpread: Double
    /// Shortest and longest item, in seconds. Default 3...60.
    public var durationRange: ClosedRange<Double>
    /// Share of swipes that go back one item. Default 0.08.
    public var backRate: Double
    /// Share of swipes that jump to a random item of the feed. Default 0.
    public var jumpRate: Double
    /// Chance that a swipe starts a fast-scroll burst. Default 0.03.
    public var burstRate: Double
    /// Items in a burst. Default 3...10.
    public var burstLength: ClosedRange<Int>
    /// Watch time of an item in a burst, in seconds. Default 0.3...1.0.
    public var burstWatch: ClosedRange<Double>

    /// The `mixed` model with the defaults listed on each property.
    public init(name: String = "mixed", quickLeave: Double = 0.16, quickSeconds: Double = 2, watchToEnd: Double = 0.40,
                medianDuration: Double = 15, durationSpread: Double = 0.5, durationRange: ClosedRange<Double> = 3...60,
                backRate: Double = 0.08, jumpRate: Double = 0, burstRate: Double = 0.03, burstLength: ClosedRange<Int> = 3...10,
                burstWatch: ClosedRange<Double> = 0.3...1.0) {
        self.name = name
        self.quickLeave = quickLeave
        self.quickSeconds = quickSeconds
        self.watchToEnd = watchToEnd
        self.medianDuration = medianDuration
        self.durationSpread = durationSpread
        self.durationRange = durationRange
        self.backRate = backRate
        self.jumpRate = jumpRate
        self.burstRate = burstRate
        self.burstLength = burstLength
        self.burstWatch = burstWatch
    }

    /// A general audience: the defaults.
    public static let mixed = SwipeModel()
    /// Patient watchers: few quick leaves, most items watched to the end, rare bursts.
    public static let patient = SwipeModel(name: "patient", quickLeave: 0.05, watchToEnd: 0.65, backRate: 0.05,
                                           burstRate: 0.005)
    /// Fast scrollers: most items left within 1.5 s, frequent bursts of sub-second looks.
    public static let scroller = SwipeModel(name: "scroller", quickLeave: 0.65, quickSeconds: 1.5, watchToEnd: 0.05,
                                            backRate: 0.04, burstRate: 0.25, burstLength: 4...15,
                                            burstWatch: 0.2...0.8)

    /// The presets by name.
    public static let presets: [SwipeModel] = [.mixed, .patient, .scroller]

    /// Parses `PRESET[,key=value...]`, e.g. `scroller,back=0.1` or `mixed,median=20,burst=0`. Keys: `quick`,
    /// `quickSeconds`, `end`, `median`, `spread`, `minDuration`, `maxDuration`, `back`, `jump`, `burst`, `burstMin`,
    /// `burstMax`, `burstWatchMin`, `burstWatchMax`.
    public static func parse(_ text: String) throws -> SwipeModel {
        let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let head = parts.first, !head.isEmpty else {
            throw PolicyLabError.invalidParameter(name: "--model", reason: "empty model")
        }
        var settings = parts.dropFirst()
        var model: SwipeModel
        if let preset = presets.first(where: { $0.name.lowercased() == head.lowercased() }) {
            model = preset
        } else if head.contains("=") {
            model = .mixed
            settings.insert(head, at: settings.startIndex)
        } else {
            throw PolicyLabError.invalidParameter(
                name: "--model", reason: "unknown model '\(head)' (built in: mixed, patient, scroller)")
        }
        var minDuration = model.durationRange.lowerBound, maxDuration = model.durationRange.upperBound
        var burstMin = model.burstLength.lowerBound, burstMax = model.burstLength.upperBound
        var watchMin = model.burstWatch.lowerBound, watchMax = model.burstWatch.upperBound
        for setting in settings {
            let kv = setting.split(separator: "=", maxSplits: 1).map(String.init)
            // Within ±1e9: no setting means anything beyond, and every one converts safely.
            guard kv.count == 2, let value = Double(kv[1]), value.isFinite, abs(value) <= 1e9 else {
                throw PolicyLabError.invalidParameter(name: "--model", reason: "'\(setting)' is not key=number (|number| <= 1e9)")
            }
            switch kv[0].lowercased() {
            case "quick": model.quickLeave = value
            case "quickseconds": model.quickSeconds = value
            case "end": model.watchToEnd = value
            case "median": model.medianDuration = value
            case "spread": model.durationSpread = value
            case "minduration": minDuration = value
            case "maxduration": maxDuration = value
            case "back": model.backRate = value
            case "jump": model.jumpRate = value
            case "burst": model.burstRate = value
            case "burstmin": burstMin = Int(value)
            case "burstmax": burstMax = Int(value)
            case "burstwatchmin": watchMin = value
            case "burstwatchmax": watchMax = value
            default: throw PolicyLabError.invalidParameter(name: "--model", reason: "unknown parameter '\(kv[0])'")
            }
        }
        guard minDuration > 0, maxDuration >= minDuration else {
            throw PolicyLabError.invalidParameter(name: "--model", reason: "need 0 < minDuration <= maxDuration")
        }
        guard burstMin >= 1, burstMax >= burstMin, watchMin >= 0, watchMax >= watchMin else {
            throw PolicyLabError.invalidParameter(name: "--model", reason: "need 1 <= burstMin <= burstMax and 0 <= burstWatchMin <= burstWatchMax")
        }
        model.durationRange = minDuration...maxDuration
        model.burstLength = burstMin...burstMax
        model.burstWatch = watchMin...watchMax
        if !settings.isEmpty && !presets.contains(model) { model.name = "\(model.name)*" }
        try model.validate()
        return model
    }

    /// Throws when a probability is outside 0...1 or a duration is not positive.
    public func validate() throws {
        for (key, p) in [("quick", quickLeave), ("end", watchToEnd), ("back", backRate), ("jump", jumpRate),
                         ("burst", burstRate)]
        where !(0...1).contains(p) {
            throw PolicyLabError.invalidParameter(name: "--model", reason: "\(key) must be a probability in 0...1")
        }
        guard quickLeave + watchToEnd <= 1 else {
            throw PolicyLabError.invalidParameter(name: "--model", reason: "quick + end must not exceed 1")
        }
        guard backRate + jumpRate <= 1 else {
            throw PolicyLabError.invalidParameter(name: "--model", reason: "back + jump must not exceed 1")
        }
        guard quickSeconds > 0, medianDuration > 0, durationSpread >= 0 else {
            throw PolicyLabError.invalidParameter(name: "--model", reason: "quickSeconds and median must be positive, spread at least 0")
        }
    }

    /// A duration drawn from the model.
    public func drawDuration(_ rng: inout SimRandom) -> Double {
        let d = rng.logNormal(median: medianDuration, spread: durationSpread)
        return min(max(d, durationRange.lowerBound), durationRange.upperBound)
    }

    /// How long an item of `duration` seconds is watched outside a burst.
    public func drawWatch(duration: Double, _ rng: inout SimRandom) -> Double {
        let r = rng.unit()
        let quick = min(quickSeconds, duration)
        if r < quickLeave { return rng.uniform(0, quick) }
        if r < quickLeave + watchToEnd { return duration }
        return rng.uniform(quick, max(duration, quick))
    }

    public var description: String {
        "\(name): quick \(quickLeave) within \(quickSeconds)s, end \(watchToEnd), median \(medianDuration)s, back \(backRate), jump \(jumpRate), burst \(burstRate)"
    }
}
