import Media

extension ThumbnailBatch {
    /// Why one item of a batch failed. Recorded in the item's card; the batch goes on.
    public enum Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        /// The source could not be opened, decoded or converted.
        case renderFailed(item: String, underlying: MediaError)
        /// The item took longer than the per-item time limit.
        case timedOut(item: String, seconds: Double)
        /// A thumbnail could not be encoded or written.
        case writeFailed(item: String, underlying: MediaError)

        /// One sentence naming the item.
        public var description: String {
            switch self {
            case .renderFailed(let item, let underlying):
                "\(item): cannot render a thumbnail: \(underlying.description)"
            case .timedOut(let item, let seconds):
                "\(item): gave up after the per-item time limit of \(seconds) s"
            case .writeFailed(let item, let underlying):
                "\(item): cannot write the thumbnail: \(underlying.description)"
            }
        }
    }
}
