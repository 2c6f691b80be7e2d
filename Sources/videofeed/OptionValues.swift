import ArgumentParser
import Feed
import Foundation
import Prefetch

// Values of options that ArgumentParser parses itself: a bad value is refused while parsing, with a message naming
// the option and its help, so that `run()` only ever sees valid values.

/// A number of bytes as the options spell it: `256MiB`, `64M`, `1GiB`, `500K`, `1048576`; from 1 byte to 1 PiB.
struct ByteCount: ExpressibleByArgument, Equatable {
    /// The number of bytes.
    let bytes: Int
    /// The value as written, shown as an option's default.
    private let text: String

    /// `mebibytes` MiB, written `<n>MiB`.
    static func mebibytes(_ mebibytes: Int) -> ByteCount {
        ByteCount(bytes: mebibytes << 20, text: "\(mebibytes)MiB")
    }

    private init(bytes: Int, text: String) {
        self.bytes = bytes
        self.text = text
    }

    /// Parses a count with an optional unit (`b`, `k`/`kib`, `m`/`mib`, `g`/`gib`, any case; fractions allowed
    /// with a unit); nil for anything not from 1 byte to 1 PiB.
    init?(argument: String) {
        let t = argument.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Int)] = [("gib", 1 << 30), ("g", 1 << 30), ("mib", 1 << 20), ("m", 1 << 20),
                                      ("kib", 1 << 10), ("k", 1 << 10), ("b", 1)]
        if let (suffix, scale) = units.first(where: { t.hasSuffix($0.0) }) {
            guard let v = Double(t.dropLast(suffix.count)), v > 0, v * Double(scale) <= Double(1 << 50) else {
                return nil
            }
            self.init(bytes: max(1, Int(v * Double(scale))), text: argument)
        } else {
            guard let v = Int(t), v > 0, v <= 1 << 50 else { return nil }
            self.init(bytes: v, text: argument)
        }
    }

    var defaultValueDescription: String { text }
}

/// Several byte counts separated by commas, e.g. `64MiB,256MiB`: `simulate --budget` sweeps them.
struct ByteCountList: ExpressibleByArgument, Equatable {
    /// The counts in the order given; never empty.
    let values: [ByteCount]

    /// One count.
    init(_ value: ByteCount) { values = [value] }

    /// nil when the list has no entry or any entry is not a ``ByteCount`` (empty entries, as in `64M,,1G`, are
    /// skipped).
    init?(argument: String) {
        var values: [ByteCount] = []
        for part in argument.split(separator: ",") {
            guard let value = ByteCount(argument: String(part)) else { return nil }
            values.append(value)
        }
        guard !values.isEmpty else { return nil }
        self.values = values
    }

    var defaultValueDescription: String { values.map(\.defaultValueDescription).joined(separator: ",") }
}

/// A range of milliseconds, `MIN-MAX` (or one number), each end from 0 to a day (86,400,000 ms): `play --dwell-ms`.
struct MillisecondRange: ExpressibleByArgument, Equatable {
    /// The range.
    let milliseconds: ClosedRange<Int>

    /// `milliseconds`.
    init(_ milliseconds: ClosedRange<Int>) { self.milliseconds = milliseconds }

    /// `"250-1500"` → 250...1500, `"300"` → 300...300; nil for anything else or out of range. Empty ends are
    /// skipped, so `"300-"` is 300...300.
    init?(argument: String) {
        let day = 86_400_000
        let parts = argument.split(separator: "-").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        if parts.count == 1, let v = parts[0], v >= 0, v <= day {
            milliseconds = v...v
        } else if parts.count == 2, let lo = parts[0], let hi = parts[1], lo >= 0, hi >= lo, hi <= day {
            milliseconds = lo...hi
        } else {
            return nil
        }
    }

    var defaultValueDescription: String { "\(milliseconds.lowerBound)-\(milliseconds.upperBound)" }
}

/// A `play` swipe script: `n` (next), `p` (previous), `jN` (jump to item N), comma-separated, e.g. `n,n,p,j5`.
struct SwipeList: ExpressibleByArgument, Equatable {
    /// The swipes in order; never empty.
    let actions: [SwipeAction]

    /// nil when the script is empty or any entry is not n, p or jN (see ``SwipeScript/parse(_:)``).
    init?(argument: String) {
        guard let actions = SwipeScript.parse(argument) else { return nil }
        self.actions = actions
    }
}

/// A built-in prefetch policy by name: window, forwardN (N from 0 to 64), tiktokLike, staged, swipeAware (any case).
struct PolicyChoice: ExpressibleByArgument {
    /// The policy, with its default parameters.
    let policy: any PrefetchPolicy
    /// The name as written.
    private let name: String

    /// nil for a name ``BuiltInPolicies/named(_:)`` does not know.
    init?(argument: String) {
        guard let policy = BuiltInPolicies.named(argument) else { return nil }
        self.policy = policy
        self.name = argument
    }

    /// The window policy, `window`.
    static var window: PolicyChoice { PolicyChoice(policy: WindowPolicy(), name: "window") }

    /// The staged policy, `staged` (the server's default: the current item buffered, neighbours at first frame).
    static var staged: PolicyChoice { PolicyChoice(policy: StagedPolicy(), name: "staged") }

    private init(policy: any PrefetchPolicy, name: String) {
        self.policy = policy
        self.name = name
    }

    var defaultValueDescription: String { name }
}

extension DisplaySize: ExpressibleByArgument {
    /// `WxH` with both sides positive, e.g. `1080x1920`.
    public init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x")
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else {
            return nil
        }
        self.init(width: width, height: height)
    }

    /// `1080x1920`.
    public var defaultValueDescription: String { description }
}
