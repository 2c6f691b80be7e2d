import EngineSupport
import Synchronization

/// What FFmpeg's interrupt callback reads through its `opaque` pointer: the caller's token and the deadline of the
/// operation in progress. Owned by a ``MediaFile`` for as long as its format context lives.
final class InterruptState: Sendable {
    let token: CancellationToken?
    /// Which limit an interruption was for: the operation's (open or read) or the whole item's.
    enum Limit: UInt8 {
        case open = 1, read, item

        /// How an error names it.
        var phrase: String {
            switch self {
            case .open: "the open time limit passed"
            case .read: "the read time limit passed"
            case .item: "the item's time limit passed"
            }
        }
    }

    /// Deadline in `DispatchTime` uptime nanoseconds; 0 means none.
    private let deadline = Atomic<UInt64>(0)
    /// The ``Limit`` the armed deadline is (its raw value).
    private let armed = Atomic<UInt8>(0)
    /// The whole item's deadline (``OpenOptions/itemTimeLimit``), set once at creation; 0 means none.
    private let itemDeadline: UInt64
    /// The ``Limit`` that interrupted (its raw value); 0 while none has.
    private let expired = Atomic<UInt8>(0)

    init(token: CancellationToken?, itemTimeLimit: Double? = nil) {
        self.token = token
        if let limit = itemTimeLimit, limit > 0, limit.isFinite {
            itemDeadline = Self.now() &+ Self.nanoseconds(limit)
        } else {
            itemDeadline = 0
        }
    }

    /// Whether the item's wall-clock limit has passed.
    var itemExpired: Bool { itemDeadline != 0 && Self.now() >= itemDeadline }

    /// Arms the `limit` deadline (open or read) `seconds` from now; nil or a non-positive value disarms it.
    func arm(seconds: Double?, for limit: Limit) {
        guard let seconds, seconds > 0, seconds.isFinite else {
            deadline.store(0, ordering: .relaxed)
            return
        }
        armed.store(limit.rawValue, ordering: .relaxed)
        deadline.store(Self.now() &+ Self.nanoseconds(seconds), ordering: .relaxed)
    }

    func disarm() { deadline.store(0, ordering: .relaxed) }

    /// Whether the last interruption was caused by a deadline (as opposed to the token).
    var timedOut: Bool { expired.load(ordering: .relaxed) != 0 }

    /// The limit that interrupted, if one did.
    var expiredLimit: Limit? { Limit(rawValue: expired.load(ordering: .relaxed)) }

    var isCancelled: Bool { token?.isCancelled ?? false }

    /// Called by FFmpeg, from whatever thread runs the blocking call.
    func shouldInterrupt() -> Bool {
        if token?.isCancelled == true { return true }
        if itemExpired {
            expired.store(Limit.item.rawValue, ordering: .relaxed)
            return true
        }
        let d = deadline.load(ordering: .relaxed)
        if d != 0 && Self.now() >= d {
            expired.store(armed.load(ordering: .relaxed), ordering: .relaxed)
            return true
        }
        return false
    }

    /// `seconds` (positive and finite) in nanoseconds, capped at about three years so no limit can overflow.
    static func nanoseconds(_ seconds: Double) -> UInt64 {
        UInt64(min(seconds, 1e8) * 1e9)
    }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
