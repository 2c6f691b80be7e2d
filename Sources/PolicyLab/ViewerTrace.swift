import Foundation

/// Many viewers' sessions of a served feed as one file: CSV `viewer,time_s,index`, one move per line (an optional
/// header line; `#` starts a comment). At `time_s` (seconds from the start) viewer `viewer` shows feed item `index`
/// (0-based, in the listing's order). A viewer's first line is its arrival; it leaves a tail after its last line.
/// `scripts/serve-replay.py` replays the same file against a live `videofeed serve`.
public struct ViewerTrace: Sendable, Equatable {
    /// One move.
    public struct Move: Sendable, Equatable {
        /// The viewer (any integer naming it in the file).
        public var viewer: Int
        /// Seconds from the start.
        public var time: Double
        /// The feed item it shows from then on.
        public var index: Int

        /// A move.
        public init(viewer: Int, time: Double, index: Int) {
            self.viewer = viewer
            self.time = time
            self.index = index
        }
    }

    /// Every move, by time (ties keep the file's order).
    public var moves: [Move]

    /// A trace of `moves`, sorted by time.
    public init(moves: [Move]) {
        self.moves = moves.enumerated().sorted { $0.element.time != $1.element.time
            ? $0.element.time < $1.element.time : $0.offset < $1.offset }.map(\.element)
    }

    /// The viewers, in the order they arrive.
    public var viewers: [Int] {
        var seen = Set<Int>(), order: [Int] = []
        for move in moves where seen.insert(move.viewer).inserted { order.append(move.viewer) }
        return order
    }

    /// Reads the trace at `path`.
    /// - Throws: ``PolicyLabError`` naming the file (and line) when it cannot be read or understood.
    public static func load(path: String) throws -> ViewerTrace {
        let data = try InputFile.contents(of: path)
        guard let text = String(data: data, encoding: .utf8) else {
            throw PolicyLabError.malformedTrace(path: path, line: 1, reason: "not UTF-8 text")
        }
        return try parse(text, path: path)
    }

    /// Parses trace text; `path` names the item in errors.
    public static func parse(_ text: String, path: String) throws -> ViewerTrace {
        var moves: [Move] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            func fail(_ reason: String) -> PolicyLabError { .malformedTrace(path: path, line: n + 1, reason: reason) }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if moves.isEmpty && fields.first?.lowercased() == "viewer" { continue }   // header
            guard fields.count == 3 else { throw fail("expected 3 fields 'viewer,time_s,index', found \(fields.count)") }
            guard let viewer = Int(fields[0]) else { throw fail("viewer '\(fields[0])' is not an integer") }
            guard let time = Double(fields[1]), time.isFinite, time >= 0, time <= 86_400 * 7 else {
                throw fail("time '\(fields[1])' is not a number of seconds from 0 to a week")
            }
            guard let index = Int(fields[2]), index >= 0, index <= 1_000_000 else {
                throw fail("index '\(fields[2])' is not an item index from 0 to 1000000")
            }
            moves.append(Move(viewer: viewer, time: time, index: index))
        }
        guard !moves.isEmpty else { throw PolicyLabError.emptyTrace(path: path) }
        return ViewerTrace(moves: moves)
    }

    /// The CSV text of this trace (with its header), as ``parse(_:path:)`` reads it.
    public var csv: String {
        var out = "viewer,time_s,index\n"
        for move in moves { out += "\(move.viewer),\(String(format: "%.3f", move.time)),\(move.index)\n" }
        return out
    }

    /// A trace drawn for `seed`: `viewers` arrive uniformly within `arrival` seconds, each dwells a uniform
    /// `dwell` seconds on an item, then goes to the next item, back one (one move in ten) or, with probability
    /// `jump`, to a random item of the `items`; every viewer stops moving at `seconds`. The same arguments give the
    /// same trace (scripts/serve-trace.py draws the same shape of trace in Python).
    public static func generate(viewers: Int, items: Int, seconds: Double, dwell: ClosedRange<Double>,
                                jump: Double, arrival: Double, seed: UInt64) -> ViewerTrace {
        var rng = SimRandom(seed: seed)
        var moves: [Move] = []
        let count = max(1, items)
        for viewer in 0..<max(0, viewers) {
            var time = rng.uniform(0, max(0, arrival))
            var index = rng.integer(in: 0...(count - 1))
            while time < seconds {
                moves.append(Move(viewer: viewer, time: time, index: index))
                time += rng.uniform(dwell.lowerBound, dwell.upperBound)
                let draw = rng.unit()
                if draw < jump {
                    var target = rng.integer(in: 0...(count - 1))
                    if target == index { target = (index + 1) % count }
                    index = target
                } else if draw < jump + 0.1 {
                    index = (index - 1 + count) % count
                } else {
                    index = (index + 1) % count
                }
            }
        }
        return ViewerTrace(moves: moves)
    }
}
