import Batch
import EngineSupport
import Feed
import Foundation
import Media

/// How ``ThumbnailBatch`` makes one item for the batch engine: renders its thumbnails and writes each image
/// atomically, recording a ``ThumbnailCard`` in `cards.jsonl`.
struct ThumbnailMaker: BatchMaker {
    let configuration: ThumbnailBatch.Configuration
    /// Items whose output files would overwrite (or need a folder where there is a file of) an earlier item's in
    /// the whole feed — e.g. `a` with two positions writes `a.2.jpg`, which is also the file of an item `a.2` — and
    /// that earlier item's id. They fail with ``ThumbnailBatch/Error/outputClash(item:other:path:)``; the earlier
    /// item keeps its files. Worked out over the whole feed (``ThumbnailBatch/outputClashes(_:options:)``), so every
    /// shard agrees.
    let clashes: [String: (other: String, path: String)]

    func recordFileName(for shard: Shard) -> String { shard.cardFileName }
    func readRecords(from url: URL) -> [ThumbnailCard] { CardFile.read(url).cards }
    func writeRecords(_ records: [ThumbnailCard], to url: URL) throws { try CardFile.write(records, to: url) }
    func id(of record: ThumbnailCard) -> String { record.publicID }

    var outputKind: BatchOutputKind { .files }
    func outputs(of record: ThumbnailCard) -> [String] { record.thumbnails }

    var fingerprint: String { configuration.options.fingerprint }
    func facts(of card: ThumbnailCard) -> BatchRecordFacts {
        BatchRecordFacts(ok: card.status == .ok, stamp: SourceStamp(size: card.sourceSize, mtime: card.sourceMtime,
                                                                    etag: card.sourceEtag),
                         fingerprint: Self.runFingerprint(of: card), files: card.thumbnails)
    }

    /// What an HDR card's `options` ends with once its images are tone-mapped by libavfilter's curve, the
    /// renditions' own; an HDR card without it was made by the Swift curve before and is redone (SDR cards are not).
    static let toneMappedMark = ";tm=hable"

    /// The fingerprint of the run that made `card`, as the engine compares it with this run's: an HDR card made
    /// before ``toneMappedMark`` compares unequal to any.
    static func runFingerprint(of card: ThumbnailCard) -> String {
        guard card.toneMapping != nil else { return card.options }
        return card.options.hasSuffix(toneMappedMark) ? String(card.options.dropLast(toneMappedMark.count))
            : card.options + ";tm=reinhard"
    }

    /// An item that clashes writes nothing: the names are the earlier item's, whose temporaries they would be.
    func outputNames(of publicID: String) -> [BatchOutputName] {
        if clashes[publicID] != nil { return [] }
        let relative = OutputPath.relative(for: publicID)
        return ThumbnailBatch.outputSuffixes(configuration.options).map { .exactly(relative + $0) }
    }

    /// An item that clashes writes nothing and removes nothing: its previous images may be the earlier item's now.
    func keepsOutputs(of previous: ThumbnailCard, after failure: ThumbnailBatch.Error) -> Bool {
        if case .outputClash = failure { return true }
        return false
    }

    /// Renders one item under its deadline and writes its images; never throws.
    func make(_ item: BatchItem, previous: ThumbnailCard?) -> (record: ThumbnailCard, failure: ThumbnailBatch.Error?) {
        let options = configuration.options
        let publicID = item.item.publicID
        var card = ThumbnailCard(
            publicID: publicID, createdAt: item.createdAt, thumbnails: [], source: item.recordedSource, status: .ok,
            sourceSize: item.stamp.size, sourceMtime: item.stamp.mtime, sourceEtag: item.stamp.etag,
            options: options.fingerprint)
        let failure: ThumbnailBatch.Error?
        if let clash = clashes[publicID] {
            // Its files are the earlier item's: write nothing.
            failure = .outputClash(item: publicID, other: clash.other, path: clash.path)
        } else {
            do {
                let renderer = ThumbnailRenderer(options: options, openOptions: item.deadline.options)
                let rendered = try renderer.render(path: item.source, cancellation: item.deadline.token)
                card.thumbnails = try write(rendered.images, for: publicID, in: OutputFolder(configuration.output))
                card.width = rendered.images.first?.width
                card.height = rendered.images.first?.height
                card.duration = rendered.duration
                card.blank = rendered.blank ? true : nil
                card.frameTimes = rendered.times
                card.toneMapping = rendered.toneMapping == .none ? nil : rendered.toneMapping.rawValue
                if card.toneMapping != nil { card.options += Self.toneMappedMark }
                failure = nil
            } catch let error as ThumbnailBatch.Error {
                failure = error
            } catch let error as MediaError {
                // The timer's cancel and Media's own item deadline (the same limit) both mean the item ran out of time.
                failure = item.ranOut(error) ? .timedOut(item: publicID, seconds: configuration.timeLimit ?? 0)
                    : .renderFailed(item: publicID, underlying: error)
            } catch {
                failure = .renderFailed(item: publicID, underlying: MediaError(
                    .other, operation: "thumbnail", item: item.source, message: String(describing: error)))
            }
        }
        if let failure {
            card.thumbnails = []
            card.status = .failed
            card.error = failure.description
        }
        return (card, failure)
    }

    /// Encodes and writes each image atomically; returns the paths relative to the output folder.
    private func write(_ images: [Image], for publicID: String,
                       in folder: OutputFolder) throws(ThumbnailBatch.Error) -> [String] {
        let options = configuration.options
        let encoder = ImageEncoder(format: options.format, quality: options.quality)
        let relative = OutputPath.relative(for: publicID)
        var paths: [String] = []
        let suffixes = ThumbnailBatch.outputSuffixes(options)
        for (i, image) in images.enumerated() {
            let suffix = i < suffixes.count ? suffixes[i] : ".\(i + 1)." + options.format.fileExtension
            do {
                // The folders on the way are checked and created here; a symbolic link leading out of OUT is refused.
                let url = try folder.prepare(relative + suffix)
                try encoder.write(image, to: url.path)
            } catch let refusal as OutputFolder.Refusal {
                throw .unsafeOutput(item: publicID, reason: refusal.description)
            } catch let error as MediaError {
                throw .writeFailed(item: publicID, underlying: error)
            } catch {
                throw .writeFailed(item: publicID, underlying: MediaError(
                    .io, operation: "write", item: relative + suffix, message: SystemErrorText.reason(error)))
            }
            paths.append(relative + suffix)
        }
        return paths
    }
}
