import Dispatch
import EngineSupport
import Feed
import Foundation
import Media

extension TranscodeBatch {
    struct Outcome {
        var record: RenditionRecord
        var failure: TranscodeError?
        /// A URL item found unchanged by its `HEAD` answer.
        var skipped = false
    }

    /// Transcodes one item under the time limit into its versioned folder; never throws.
    func process(_ item: FeedItem, previous: RenditionRecord?) -> Outcome {
        let started = Date()
        let source = item.source.isFileURL ? item.source.path : item.source.absoluteString
        let fingerprint = configuration.settings.fingerprint
        var stamp = SourceStamp(item: item)
        if stamp.needsRemoteCheck && !item.source.isFileURL {
            stamp.etag = RemoteStamp.fetch(item.source, timeout: min(configuration.timeLimit ?? 15, 15))
            if !configuration.force, let previous, isCurrent(previous, stamp: stamp, fingerprint: fingerprint) {
                return Outcome(record: previous, skipped: true)
            }
        }
        var record = RenditionRecord(
            publicID: item.publicID, createdAt: ISO8601DateFormatter().string(from: item.createdAt), status: .ok,
            source: configuration.recordsSourceSecrets ? source : Redaction.redacted(source),
            sourceSize: stamp.size, sourceMtime: stamp.mtime,
            sourceEtag: stamp.etag, settings: fingerprint)
        let relative = RenditionFolder.name(for: item.publicID, stamp: stamp, settings: configuration.settings)
        let deadline = ItemDeadline(limit: configuration.timeLimit, started: started,
                                    options: configuration.openOptions)
        defer { deadline.finish() }

        let folder = OutputFolder(configuration.output)
        var failure: TranscodeError? = nil
        var staging: URL? = nil
        do {
            let final = try folder.prepare(relative)
            let stage = URL(fileURLWithPath: AtomicFile.temporaryPath(for: final.path))
            staging = stage
            let file = try MediaFile(path: source, options: deadline.options, cancellation: deadline.token)
            let transcoder = try Transcoder(file: file, settings: configuration.settings)
            let report = try transcoder.run(into: stage)
            // Whole or nothing: the finished item replaces any earlier copy of the same version in one rename.
            try? folder.removeFolder(relative)
            guard rename(stage.path, final.path) == 0 else {
                throw MediaError(.io, operation: "write", item: final.path, message: String(cString: strerror(errno)))
            }
            staging = nil
            record.folder = relative
            record.renditions = report.renditions.map { r in
                func inside(_ path: String?) -> String? { path.map { relative + "/" + $0 } }
                return RenditionRecord.Rendition(
                    name: r.name, width: r.width, height: r.height, bandwidth: r.bandwidth,
                    averageBandwidth: r.averageBandwidth, duration: r.duration, frames: r.frames,
                    segmentCount: r.segments.count, codecs: r.codecs, mp4: inside(r.mp4), playlist: inside(r.playlist),
                    initSegment: inside(r.initSegment), segments: r.segments.map { relative + "/" + $0 })
            }
            record.master = report.masterPlaylist.map { relative + "/" + $0 }
            record.previewMP4 = report.previewMP4.map { relative + "/" + $0 }
            record.previewWebP = report.previewWebP.map { relative + "/" + $0 }
            record.hasAudio = report.hasAudio
            record.duration = report.renditions.first?.duration
            record.deinterlaced = report.deinterlaced ? true : nil
            record.toneMapped = report.toneMapped ? true : nil
            record.still = report.wasStill ? true : nil
        } catch let refusal as OutputFolder.Refusal {
            failure = .unsafeOutput(item: item.publicID, reason: refusal.description)
        } catch let error as MediaError {
            if deadline.ranOut(error, limit: configuration.timeLimit, started: started) {
                failure = .timedOut(item: item.publicID, seconds: configuration.timeLimit ?? 0)
            } else {
                failure = .failed(item: item.publicID, underlying: error)
            }
        } catch {
            failure = .failed(item: item.publicID, underlying: MediaError(
                .other, operation: "transcode", item: source, message: String(describing: error)))
        }
        if let staging { try? FileManager.default.removeItem(at: staging) }
        if let failure {
            record.status = .failed
            record.error = failure.description
            if let previous, previous.status == .ok || previous.folder != nil {
                // The last good version stays served (and on disk) until a new one is made: a new upload that
                // cannot be read, or a source that is unreachable today, must not take the item out of the feed.
                record.folder = previous.folder
                record.renditions = previous.renditions
                record.master = previous.master
                record.previewMP4 = previous.previewMP4
                record.previewWebP = previous.previewWebP
                record.hasAudio = previous.hasAudio
                record.duration = previous.duration
            }
        }
        record.seconds = (Date().timeIntervalSince(started) * 1000).rounded() / 1000
        return Outcome(record: record, failure: failure)
    }
}
