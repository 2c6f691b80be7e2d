import ArgumentParser

/// The ranges every numeric option is checked against in `validate()`, so that no value — `1e300` seconds, a
/// hundred thousand threads — reaches a conversion that traps or an allocation that takes the machine's memory.
enum NumberRules {
    /// A year: the longest time limit or timeout any option takes.
    static let maxSeconds = 365.0 * 86_400
    /// Decoder threads, items rendered at once, prefetch workers: more is never faster on any machine we know and
    /// each costs a thread and a decoder's memory.
    static let maxThreads = 64
    /// The latest media time a position or start may name (about 11.6 days: longer than any feed item).
    static let maxMediaSeconds = 1_000_000.0

    /// `value` as a positive number of seconds of at most a year, or a ``ValidationError`` naming `option`.
    static func timeLimit(_ value: Double, _ option: String) throws {
        guard value > 0, value <= maxSeconds else {
            throw ValidationError("\(option) must be a number of seconds above 0 and at most \(Int(maxSeconds)) (a year).")
        }
    }

    /// `value` as a count from 1 to `max`, or a ``ValidationError`` naming `option`.
    static func count(_ value: Int, _ option: String, max: Int) throws {
        guard value >= 1, value <= max else {
            throw ValidationError("\(option) must be from 1 to \(max).")
        }
    }

    /// `value` as a media time from 0 to ``maxMediaSeconds``, or a ``ValidationError`` naming `option`.
    static func mediaTime(_ value: Double, _ option: String) throws {
        guard value >= 0, value <= maxMediaSeconds else {
            throw ValidationError("\(option) must be a time in seconds from 0 to \(Int(maxMediaSeconds)).")
        }
    }
}
