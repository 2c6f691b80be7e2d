import Dispatch
import Foundation

/// The cards of a running batch, shared by its workers, and their periodic atomic flush to the card file.
/// Its state is behind a ``Locked``; flushes are serialised by a second one.
final class CardJournal: Sendable {
    private struct State {
        var cards: [String: ThumbnailCard]
        var recorded = 0
        var lastFlush = DispatchTime.now()
        /// Cards recorded since the last flush.
        var dirty = false
    }

    private let state: Locked<State>
    /// Serialises flushes so two workers never write the file at the same time.
    private let writing = Locked(())
    private let file: URL

    init(cards: [ThumbnailCard], file: URL) {
        var byID: [String: ThumbnailCard] = [:]
        for card in cards { byID[card.publicID] = card }
        self.state = Locked(State(cards: byID))
        self.file = file
    }

    /// Adds or replaces a card; returns how many cards were recorded so far in this run.
    func record(_ card: ThumbnailCard) -> Int {
        state.withLock {
            $0.cards[card.publicID] = card
            $0.recorded += 1
            $0.dirty = true
            return $0.recorded
        }
    }

    /// Flushes when cards were recorded since the last flush and that flush is more than a second old.
    func flushIfDue() throws {
        let due = state.withLock { s -> Bool in
            guard s.dirty, DispatchTime.now().uptimeNanoseconds - s.lastFlush.uptimeNanoseconds > 1_000_000_000 else {
                return false
            }
            return true
        }
        if due { try flush() }
    }

    /// Writes every card to the file, atomically.
    func flush() throws {
        try writing.withLock { _ in
            let snapshot = state.withLock { s in
                s.dirty = false
                s.lastFlush = DispatchTime.now()
                return Array(s.cards.values)
            }
            try CardFile.write(snapshot, to: file)
        }
    }

    /// Flushes about once a second from a timer until the returned timer is cancelled, so the card file trails the
    /// finished items by a second even while every worker is busy with a slow item.
    func startPeriodicFlush() -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "CardJournal.flush", qos: .utility))
        timer.schedule(deadline: .now() + 0.5, repeating: 0.5, leeway: .milliseconds(100))
        timer.setEventHandler { [self] in try? flushIfDue() }
        timer.resume()
        return timer
    }
}
