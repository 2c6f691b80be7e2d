import Prefetch
import Foundation

/// Recorded sessions as files: CSV or JSON Lines, one swipe per line, times in seconds from the session start.
///
/// CSV: `time,action` with an optional header line (`time,action`, `time,index` or `time,target`); `#` starts a
/// comment. JSON Lines: `{"time": 2.5, "action": "n"}` or `{"time": 2.5, "index": 7}`. An action is `n`/`next`,
/// `p`/`prev`/`previous`, `jN` (jump to item N), a bare item index, or `end` (the session ends; optional, at most
/// once, last). Times never decrease.
///
/// A trace is replayed as watch times: the first item is watched for the first swipe's time, each item for the gap
/// to the next swipe, the last one until `end` (or not at all). See ``SwipeSession``.
public enum SwipeTrace {
    /// The two file formats.
    public enum Format: String, Sendable, CaseIterable {
        case csv, jsonl
    }

    /// One line of a trace.
    public struct Entry: Sendable, Equatable {
        /// Seconds from the session start.
        public var time: Double
        /// Nil for `end`.
        public var action: SwipeAction?
        /// An entry.
        public init(time: Double, action: SwipeAction?) {
            self.time = time
            self.action = action
        }
    }

    /// Reads the trace at `path` (format from the extension `.csv`/`.jsonl`/`.json`, else from the content).
    public static func load(path: String) throws -> SwipeSession {
        let data = try InputFile.contents(of: path)
        guard let text = String(data: data, encoding: .utf8) else {
            throw PolicyLabError.malformedTrace(path: path, line: 1, reason: "not UTF-8 text")
        }
        return try session(from: try parse(text, path: path), path: path)
    }

    /// Parses trace text; `path` names the item in errors.
    public static func parse(_ text: String, path: String) throws -> [Entry] {
        let lower = path.lowercased()
        let firstChar = text.first { !$0.isWhitespace }
        let format: Format = lower.hasSuffix(".jsonl") || lower.hasSuffix(".json") ? .jsonl
            : lower.hasSuffix(".csv") ? .csv : (firstChar == "{" ? .jsonl : .csv)
        var entries: [Entry] = []
        var ended = false
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let number = n + 1
            func fail(_ reason: String) -> PolicyLabError { .malformedTrace(path: path, line: number, reason: reason) }
            let time: Double, actionText: String
            switch format {
            case .csv:
                let fields = line.split(separator: ",", omittingEmptySubsequences: false)
                    .map { $0.trimmingCharacters(in: .whitespaces) }
                if entries.isEmpty && !ended && fields.first?.lowercased() == "time" { continue }  // header
                guard fields.count == 2 else { throw fail("expected 2 fields 'time,action', found \(fields.count)") }
                guard let t = Double(fields[0]) else { throw fail("time '\(fields[0])' is not a number") }
                time = t
                actionText = fields[1]
            case .jsonl:
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    throw fail("not a JSON object")
                }
                guard let t = (object["time"] as? NSNumber)?.doubleValue else { throw fail("missing numeric \"time\"") }
                time = t
                if let action = object["action"] as? String {
                    actionText = action
                } else if let index = object["index"] as? NSNumber ?? object["target"] as? NSNumber {
                    actionText = index.stringValue
                } else {
                    throw fail("missing \"action\" or \"index\"")
                }
            }
            guard time.isFinite, time >= 0 else { throw fail("time must be a finite number of seconds, at least 0") }
            if let last = entries.last, time < last.time { throw fail("time \(time) is before the previous \(last.time)") }
            if ended { throw fail("nothing may follow 'end'") }
            let action = try parseAction(actionText, fail: fail)
            if action == nil { ended = true }
            entries.append(Entry(time: time, action: action))
        }
        return entries
    }

    /// The action, or nil for `end`.
    private static func parseAction(_ text: String, fail: (String) -> PolicyLabError) throws -> SwipeAction? {
        switch text.lowercased() {
        case "n", "next": return .next
        case "p", "prev", "previous": return .previous
        case "end": return nil
        default:
            let digits = text.lowercased().hasPrefix("j") ? String(text.dropFirst()) : text
            guard let index = Int(digits), index >= 0 else {
                throw fail("action '\(text)' is not n, p, jN, an item index or end")
            }
            return .jump(index)
        }
    }

    /// The session the entries describe (see the type's description for how times become watch times).
    public static func session(from entries: [Entry], path: String) throws -> SwipeSession {
        let swipes = entries.filter { $0.action != nil }
        guard let first = swipes.first else { throw PolicyLabError.emptyTrace(path: path) }
        var steps: [SwipeSession.Step] = []
        steps.reserveCapacity(swipes.count)
        for (k, entry) in swipes.enumerated() {
            let next = k + 1 < swipes.count ? swipes[k + 1].time : (entries.last?.action == nil ? entries.last!.time : entry.time)
            steps.append(.init(action: entry.action!, watch: next - entry.time))
        }
        return SwipeSession(initialWatch: first.time, steps: steps)
    }

    /// The session as trace text, times being the sums of the watch times (the session as the viewer intends it,
    /// without waits for missed frames), ending with an `end` line.
    public static func text(of session: SwipeSession, format: Format) -> String {
        var out = format == .csv ? "time,action\n" : ""
        var t = session.initialWatch
        func line(_ time: Double, _ action: String) {
            let ts = String(format: "%.3f", time)
            out += format == .csv ? "\(ts),\(action)\n" : "{\"time\": \(ts), \"action\": \"\(action)\"}\n"
        }
        for step in session.steps {
            line(t, step.action.description)
            t += step.watch
        }
        line(t, "end")
        return out
    }
}
