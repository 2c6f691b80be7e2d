import Dispatch
import EngineSupport
import Feed
import Foundation
import Media

extension ThumbnailBatch {
    /// A finished item: its card and, when it failed, why.
    struct Outcome {
        var card: ThumbnailCard
        var failure: Error?
        /// The item turned out unchanged (a URL whose `HEAD` answer matches its card) and was not rendered.
        var skipped = false
        var status: ThumbnailCard.Status { card.status }
    }

    /// Renders one item under the time limit and writes its files; never throws.
    func process(_ item: FeedItem, previous: ThumbnailCard?) -> Outcome {
        let options = configuration.options
        let source = item.source.isFileURL ? item.source.path : item.source.absoluteString
        var stamp = SourceStamp(item: item)
        // The item's time limit counts from here, the version check included.
        let started = Date()
        if stamp.needsRemoteCheck && !item.source.isFileURL {
            stamp.etag = RemoteStamp.fetch(item.source, timeout: min(configuration.timeLimit ?? 15, 15))
            if !configuration.force, let previous, previous.status == .ok,
               previous.options == options.fingerprint, stamp.matches(previous), outputsExist(previous) {
                return Outcome(card: previous, failure: nil, skipped: true)
            }
        }
        var card = ThumbnailCard(
            publicID: item.publicID, createdAt: ISO8601DateFormatter().string(from: item.createdAt), thumbnails: [],
            source: configuration.recordsSourceSecrets ? source : Redaction.redacted(source), status: .ok,
            sourceSize: stamp.size, sourceMtime: stamp.mtime,
            sourceEtag: stamp.etag, options: options.fingerprint)
        if let clash = clashes[item.publicID] {
            // Its files are the earlier item's: write nothing and remove nothing.
            let failure = Error.outputClash(item: item.publicID, other: clash.other, path: clash.path)
            card.status = .failed
            card.error = failure.description
            return Outcome(card: card, failure: failure)
        }
        let deadline = ItemDeadline(limit: configuration.timeLimit, started: started,
                                    options: configuration.openOptions)
        defer { deadline.finish() }
        let renderer = ThumbnailRenderer(options: options, openOptions: deadline.options)
        let failure: Error?
        do {
            let rendered = try renderer.render(path: source, cancellation: deadline.token)
            card.thumbnails = try write(rendered.images, for: item.publicID)
            card.width = rendered.images.first?.width
            card.height = rendered.images.first?.height
            card.duration = rendered.duration
            card.blank = rendered.blank ? true : nil
            card.frameTimes = rendered.times
            card.toneMapping = rendered.toneMapping == .none ? nil : rendered.toneMapping.rawValue
            failure = nil
        } catch let error as Error {
            failure = error
        } catch let error as MediaError {
            // The timer's cancel and Media's own item deadline (the same limit) both mean the item ran out of time.
            if deadline.ranOut(error, limit: configuration.timeLimit, started: started) {
                failure = .timedOut(item: item.publicID, seconds: configuration.timeLimit ?? 0)
            } else {
                failure = .renderFailed(item: item.publicID, underlying: error)
            }
        } catch {
            failure = .renderFailed(item: item.publicID, underlying: MediaError(
                .other, operation: "thumbnail", item: source, message: String(describing: error)))
        }
        if let failure {
            card.status = .failed
            card.error = failure.description
        }
        removeOutputs(previous?.thumbnails ?? [], keeping: card.thumbnails)
        return Outcome(card: card, failure: failure)
    }

    /// Whether every thumbnail `card` lists is still in the output folder.
    func outputsExist(_ card: ThumbnailCard) -> Bool {
        let folder = self.folder
        return card.thumbnails.allSatisfy { folder.contains($0) }
    }

    /// Encodes and writes each image atomically; returns the paths relative to the output folder.
    private func write(_ images: [Image], for publicID: String) throws(Error) -> [String] {
        let options = configuration.options
        let encoder = ImageEncoder(format: options.format, quality: options.quality)
        let relative = OutputPath.relative(for: publicID)
        var paths: [String] = []
        let suffixes = Self.outputSuffixes(options)
        let folder = self.folder
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
