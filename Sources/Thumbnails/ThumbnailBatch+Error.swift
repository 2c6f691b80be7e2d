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
        /// The item's output `path` would overwrite the files of item `other`, earlier in the feed (or need a
        /// folder where that item has a file): nothing is written for it.
        case outputClash(item: String, other: String, path: String)
        /// A thumbnail's path leads out of the output folder through a symbolic link (or needs a folder where a
        /// file is): nothing is written there.
        case unsafeOutput(item: String, reason: String)

        /// One sentence naming the item.
        public var description: String {
            switch self {
            case .renderFailed(let item, let underlying):
                "\(item): cannot render a thumbnail: \(underlying.description)"
            case .timedOut(let item, let seconds):
                "\(item): gave up after the per-item time limit of \(seconds) s"
            case .writeFailed(let item, let underlying):
                "\(item): cannot write the thumbnail: \(underlying.description)"
            case .outputClash(let item, let other, let path):
                "\(item): output \(path) clashes with the files of item \(other), earlier in the feed; nothing written"
            case .unsafeOutput(let item, let reason):
                "\(item): cannot write the thumbnail: \(reason)"
            }
        }
    }
}
