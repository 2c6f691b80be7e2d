import Dispatch
import Foundation
import EngineSupport

/// The records of a running batch (one per item, by `public_id`), shared by its workers, and their periodic atomic
/// flush to the batch's record file (`cards.jsonl`, `renditions.jsonl`). Its state is behind a ``Locked``; flushes
/// are serialised by a ``Lock``, so two workers never write the file at the same time.
public final class RecordJournal<Record: Sendable>: Sendable {
    private struct State: Sendable {
        var records: [String: Record]
        var recorded = 0
        var lastFlush = DispatchTime.now()
        /// Records added since the last flush.
        var dirty = false
    }

    private let state: Locked<State>
    /// Held while the file is written (a bare lock: it guards no value, and a `Locked<Void>` made ThreadSanitizer
    /// report an exclusivity race on its zero-sized value between two flushes that the lock serialised).
    private let writing = Lock()
    private let file: URL
    private let key: @Sendable (Record) -> String
    private let write: @Sendable ([Record], URL) throws -> Void

    /// - Parameters:
    ///   - records: the records carried over from the last run.
    ///   - key: a record's item id.
    ///   - write: writes every record to the file, atomically.
    public init(records: [Record], file: URL, key: @escaping @Sendable (Record) -> String,
                write: @escaping @Sendable ([Record], URL) throws -> Void) {
        var byID: [String: Record] = [:]
        for record in records { byID[key(record)] = record }
        self.state = Locked(State(records: byID))
        self.file = file
        self.key = key
        self.write = write
    }

    /// Adds or replaces a record; returns how many records were added so far in this run.
    @discardableResult
    public func record(_ record: Record) -> Int {
        let id = key(record)
        return state.withLock {
            $0.records[id] = record
            $0.recorded += 1
            $0.dirty = true
            return $0.recorded
        }
    }

    /// Flushes when records were added since the last flush and that flush is more than a second old.
    public func flushIfDue() throws {
        let due = state.withLock { s -> Bool in
            s.dirty && DispatchTime.now().uptimeNanoseconds - s.lastFlush.uptimeNanoseconds > 1_000_000_000
        }
        if due { try flush() }
    }

    /// Writes every record to the file, atomically.
    public func flush() throws {
        try writing.withLock {
            let snapshot = state.withLock { s in
                s.dirty = false
                s.lastFlush = DispatchTime.now()
                return Array(s.records.values)
            }
            try write(snapshot, file)
        }
    }

    /// Flushes about once a second from a timer until the returned timer is cancelled, so the file trails the
    /// finished items by a second even while every worker is busy with a slow item.
    public func startPeriodicFlush() -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "RecordJournal.flush", qos: .utility))
        timer.schedule(deadline: .now() + 0.5, repeating: 0.5, leeway: .milliseconds(100))
        timer.setEventHandler { [self] in try? flushIfDue() }
        timer.resume()
        return timer
    }
}
