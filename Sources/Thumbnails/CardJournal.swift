import Dispatch
import Foundation

/// The cards of a running batch, shared by its workers, and their periodic atomic flush to the card file.
/// Its state is behind a ``Locked``; flushes are serialised by a second one.
final class CardJournal: Sendable {
    private struct State {
        var cards: [String: ThumbnailCard]
        var recorded = 0
        var lastFlush = DispatchTime.now()
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
            return $0.recorded
        }
    }

    /// Flushes when the last flush is more than a second old.
    func flushIfDue() throws {
        let due = state.withLock { s -> Bool in
            guard DispatchTime.now().uptimeNanoseconds - s.lastFlush.uptimeNanoseconds > 1_000_000_000 else {
                return false
            }
            s.lastFlush = DispatchTime.now()
            return true
        }
        if due { try flush() }
    }

    /// Writes every card to the file, atomically.
    func flush() throws {
        try writing.withLock { _ in
            let snapshot = state.withLock { Array($0.cards.values) }
            try CardFile.write(snapshot, to: file)
        }
    }
}
