import Foundation

/// The network between the player and remote items: bandwidth shared fairly by concurrent downloads, a round-trip
/// time per request, and what must be downloaded before each step.
///
/// A job for a remote item first connects (two round trips: connection and request), downloads ``probeBytes`` and
/// opens the container; before decoding a frame whose media time is not downloaded yet it requests the next
/// ``chunkSeconds`` of media (one round trip, then the bytes at the item's bitrate). So a first frame needs its first
/// chunk downloaded. Downloads are lost with the open decoder; a running download stops at once when the job is
/// cancelled.
public struct NetworkModel: Sendable, Equatable {
    /// Bits per second over time.
    public var bandwidth: BandwidthSchedule
    /// Round-trip time in seconds. Default 0.08.
    public var roundTrip: Double
    /// Bytes read to probe a container. Default 64 KiB.
    public var probeBytes: Int
    /// Media seconds fetched per request. Default 1.
    public var chunkSeconds: Double
    /// Bitrate of items whose size is unknown, in bits per second. Default 2 Mbit/s.
    public var bitrate: Double

    /// A network; see each property for the defaults.
    public init(bandwidth: BandwidthSchedule, roundTrip: Double = 0.08, probeBytes: Int = 65_536,
                chunkSeconds: Double = 1, bitrate: Double = 2_000_000) {
        self.bandwidth = bandwidth
        self.roundTrip = roundTrip
        self.probeBytes = probeBytes
        self.chunkSeconds = chunkSeconds
        self.bitrate = bitrate
    }

    /// Parses `4Mbps`, `800kbps`, `1.5M` (bits per second) or a bare number of bits per second.
    public static func parseRate(_ text: String, option: String) throws -> Double {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Double)] = [("gbps", 1e9), ("mbps", 1e6), ("kbps", 1e3), ("bps", 1), ("g", 1e9),
                                         ("m", 1e6), ("k", 1e3)]
        for (suffix, scale) in units where t.hasSuffix(suffix) {
            if let v = Double(t.dropLast(suffix.count)), v > 0, v.isFinite { return v * scale }
            break
        }
        if let v = Double(t), v > 0, v.isFinite { return v }
        throw PolicyLabError.invalidParameter(name: option, reason: "'\(text)' is not a rate like 4Mbps or 800kbps")
    }

    /// Parses `80ms`, `0.08s` or `0.08` (seconds).
    public static func parseSeconds(_ text: String, option: String) throws -> Double {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        let value: Double?
        if t.hasSuffix("ms") { value = Double(t.dropLast(2)).map { $0 / 1000 } }
        else if t.hasSuffix("s") { value = Double(t.dropLast()) }
        else { value = Double(t) }
        guard let value, value >= 0, value.isFinite else {
            throw PolicyLabError.invalidParameter(name: option, reason: "'\(text)' is not a time like 80ms or 0.08s")
        }
        return value
    }
}

/// Bandwidth over virtual time: constant, or piecewise constant from a trace that repeats after its last line.
public struct BandwidthSchedule: Sendable, Equatable {
    /// `(start second, bits per second)`, starts increasing, the first at 0.
    public private(set) var steps: [(start: Double, bitsPerSecond: Double)]
    /// The time after which the trace repeats (nil: the last rate holds forever).
    public private(set) var period: Double?

    /// A constant rate.
    public init(constant bitsPerSecond: Double) {
        steps = [(0, bitsPerSecond)]
        period = nil
    }

    /// Piecewise constant steps; the schedule repeats every `period` seconds when given.
    public init(steps: [(start: Double, bitsPerSecond: Double)], period: Double?) {
        self.steps = steps
        self.period = period
    }

    public static func == (a: BandwidthSchedule, b: BandwidthSchedule) -> Bool {
        a.period == b.period && a.steps.count == b.steps.count
            && zip(a.steps, b.steps).allSatisfy { $0.start == $1.start && $0.bitsPerSecond == $1.bitsPerSecond }
    }

    /// Reads a bandwidth trace: lines `seconds,rate` (rate as in ``NetworkModel/parseRate(_:option:)``), `#`
    /// comments, an optional `time,...` header; the first line starts at 0; the trace repeats after its last line
    /// for as long as the gap before it.
    public static func load(path: String) throws -> BandwidthSchedule {
        guard let text = String(data: try InputFile.contents(of: path), encoding: .utf8) else {
            throw PolicyLabError.unreadableFile(path: path, reason: "not UTF-8 text")
        }
        var steps: [(start: Double, bitsPerSecond: Double)] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || (steps.isEmpty && line.lowercased().hasPrefix("time")) { continue }
            func fail(_ reason: String) -> PolicyLabError { .malformedBandwidthTrace(path: path, line: n + 1, reason: reason) }
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count == 2 else { throw fail("expected 'seconds,rate'") }
            guard let t = Double(fields[0]), t >= 0, t.isFinite else { throw fail("time '\(fields[0])' is not a number of seconds") }
            guard let rate = try? NetworkModel.parseRate(fields[1], option: "rate") else { throw fail("rate '\(fields[1])' is not like 4Mbps") }
            if steps.isEmpty && t != 0 { throw fail("the first line must start at 0") }
            if let last = steps.last, t <= last.start { throw fail("times must increase") }
            steps.append((t, rate))
        }
        guard !steps.isEmpty else { throw PolicyLabError.malformedBandwidthTrace(path: path, line: 1, reason: "no line") }
        let period = steps.count > 1 ? steps.last!.start + (steps.last!.start - steps[steps.count - 2].start) : nil
        return BandwidthSchedule(steps: steps, period: period)
    }

    /// The rate at time `t` and when it next changes (infinity if never).
    func rate(at t: Double) -> (bitsPerSecond: Double, changesAt: Double) {
        guard let period, steps.count > 1 else { return (steps[0].bitsPerSecond, .infinity) }
        let cycle = (t / period).rounded(.down)
        let local = t - cycle * period
        var i = 0
        while i + 1 < steps.count && steps[i + 1].start <= local { i += 1 }
        let end = i + 1 < steps.count ? steps[i + 1].start : period
        return (steps[i].bitsPerSecond, cycle * period + end)
    }
}
