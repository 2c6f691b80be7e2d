import Batch
import EngineSupport
import Feed
import Foundation
import Media

/// How ``TranscodeBatch`` makes one item for the batch engine: transcodes it into its versioned folder
/// (``RenditionFolder``), made in a staging folder and renamed into place whole, recording a ``RenditionRecord`` in
/// `renditions.jsonl`.
struct TranscodeMaker: BatchMaker {
    let configuration: TranscodeBatch.Configuration

    func recordFileName(for shard: Shard) -> String { RenditionFile.name(for: shard) }
    func readRecords(from url: URL) -> [RenditionRecord] { RenditionFile.read(url).records }
    func writeRecords(_ records: [RenditionRecord], to url: URL) throws { try RenditionFile.write(records, to: url) }
    func id(of record: RenditionRecord) -> String { record.publicID }

    var outputKind: BatchOutputKind { .folders }
    func outputs(of record: RenditionRecord) -> [String] { record.folder.map { [$0] } ?? [] }

    var fingerprint: String { configuration.settings.fingerprint }
    func facts(of record: RenditionRecord) -> BatchRecordFacts {
        BatchRecordFacts(ok: record.status == .ok, stamp: SourceStamp(size: record.sourceSize,
                                                                      mtime: record.sourceMtime,
                                                                      etag: record.sourceEtag),
                         fingerprint: record.settings, files: record.paths)
    }

    /// The item's folder of any version: `<public_id path>.<8 hex digits>` (``RenditionFolder/name(for:stamp:settings:)``).
    func outputNames(of publicID: String) -> [BatchOutputName] {
        let relative = OutputPath.relative(for: publicID)
        return [BatchOutputName(folder: (relative as NSString).deletingLastPathComponent,
                                pattern: NSRegularExpression.escapedPattern(for: (relative as NSString).lastPathComponent)
                                    + "\\.[0-9a-f]{8}")]
    }

    /// Transcodes one item under its deadline into its versioned folder; never throws.
    func make(_ item: BatchItem, previous: RenditionRecord?) -> (record: RenditionRecord, failure: TranscodeError?) {
        let publicID = item.item.publicID
        var record = RenditionRecord(
            publicID: publicID, createdAt: item.createdAt, status: .ok, source: item.recordedSource,
            sourceSize: item.stamp.size, sourceMtime: item.stamp.mtime, sourceEtag: item.stamp.etag,
            settings: configuration.settings.fingerprint)
        let relative = RenditionFolder.name(for: publicID, stamp: item.stamp, settings: configuration.settings)
        let folder = OutputFolder(configuration.output)
        var failure: TranscodeError? = nil
        var staging: URL? = nil
        do {
            let final = try folder.prepare(relative)
            let stage = URL(fileURLWithPath: AtomicFile.temporaryPath(for: final.path))
            staging = stage
            let file = try MediaFile(path: item.source, options: item.deadline.options,
                                     cancellation: item.deadline.token)
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
            failure = .unsafeOutput(item: publicID, reason: refusal.description)
        } catch let error as MediaError {
            failure = item.ranOut(error) ? .timedOut(item: publicID, seconds: configuration.timeLimit ?? 0)
                : .failed(item: publicID, underlying: error)
        } catch {
            failure = .failed(item: publicID, underlying: MediaError(
                .other, operation: "transcode", item: item.source, message: String(describing: error)))
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
        record.seconds = item.seconds
        return (record, failure)
    }
}
