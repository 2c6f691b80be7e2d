internal import CFFmpeg
import Foundation
import Media

/// What a batch run gathers across its segments: each rendition's fast-start MP4 (every segment's packets, muxed in
/// a row), its segment files, and what the report says of it.
final class BatchFiles {
    /// A rendition's MP4 being written under its temporary name: the whole file every segment's outputs write into.
    struct MP4 {
        let file: Output.WholeFile
        let path: String
        let temporary: String
    }

    /// One rendition's segments so far.
    struct Record {
        var segments: [(index: Int, start: Double, end: Double, bytes: Int)] = []
        var peakBandwidth = 0
        var frames = 0
        var width = 0
        var height = 0
        var codecString = ""
        var firstTime: Double? = nil
        var lastEnd: Double? = nil
    }

    let folder: URL
    let renditions: [TranscodePlan.Rendition]
    let makesMP4: Bool
    let makesSegments: Bool
    var mp4s: [String: MP4] = [:]
    var finishedMP4s: Set<String> = []
    var records: [String: Record] = [:]
    var hasAudio = false
    var deinterlaced = false
    var toneMapped = false
    var sourceFrames = 0
    /// Whether the previews were made (by the preview pass).
    var madePreviews = false

    init(folder: URL, settings: TranscodeSettings, renditions: [TranscodePlan.Rendition]) {
        self.folder = folder
        self.renditions = renditions
        makesMP4 = settings.makesMP4
        makesSegments = settings.makesSegments
    }

    /// The MP4 of rendition `name`, opened by the first segment from its encoders (every segment's encoders have
    /// the same settings, so the same parameter sets); nil when the batch makes no MP4s.
    func mp4(of name: String, video: UnsafeMutablePointer<AVCodecContext>,
             audio: UnsafeMutablePointer<AVCodecContext>?) throws -> MP4? {
        guard makesMP4 else { return nil }
        if let open = mp4s[name] { return open }
        let path = folder.appendingPathComponent(ItemFile.mp4(rendition: name).path).path
        let temporary = AtomicFile.temporaryPath(for: path)
        let writer = try MediaWriter(.file(temporary, format: "mp4", options: ["movflags": "+faststart"]), item: path)
        let open = MP4(file: Output.WholeFile(writer: writer, videoStream: try writer.addStream(from: video),
                                              audioStream: try audio.map { try writer.addStream(from: $0) },
                                              finishedByOutput: false),
                       path: path, temporary: temporary)
        mp4s[name] = open
        try writer.begin()
        return open
    }

    /// Takes one segment of every rendition: writes its file (and the rendition's `init.mp4` with the first) and
    /// notes what the report needs.
    func add(_ made: [TranscodedSegment], from pipeline: Pipeline) throws {
        hasAudio = pipeline.audioEncoder != nil
        deinterlaced = deinterlaced || pipeline.deinterlaced
        toneMapped = toneMapped || pipeline.toneMapped
        sourceFrames += pipeline.windowFrames
        for (segment, output) in zip(made, pipeline.outputs) {
            var record = records[output.name] ?? Record()
            record.segments += output.segments
            record.peakBandwidth = max(record.peakBandwidth, output.peakBandwidth)
            record.frames += output.frames
            if record.width == 0 { (record.width, record.height) = (output.width, output.height) }
            record.codecString = output.codecString
            record.firstTime = record.firstTime ?? output.firstTime
            if let end = output.lastEnd { record.lastEnd = max(record.lastEnd ?? end, end) }
            if makesSegments {
                let rungFolder = folder.appendingPathComponent(output.name)
                if records[output.name] == nil {
                    do {
                        try FileManager.default.createDirectory(at: rungFolder, withIntermediateDirectories: true)
                    } catch {
                        throw MediaError(.io, operation: "create folder", item: rungFolder.path,
                                         message: error.localizedDescription)
                    }
                    try AtomicFile.write(segment.initialization, to: folder.appendingPathComponent(
                        ItemFile.initialization(rendition: output.name).path).path)
                }
                try AtomicFile.write(segment.media, to: folder.appendingPathComponent(
                    ItemFile.segment(rendition: output.name, index: segment.index).path).path)
            }
            records[output.name] = record
        }
    }

    /// Writes each MP4's index (at the front) and renames it into place.
    func finishMP4s() throws {
        for (name, mp4) in mp4s.sorted(by: { $0.key < $1.key }) where !finishedMP4s.contains(name) {
            _ = try mp4.file.writer.finish()
            guard rename(mp4.temporary, mp4.path) == 0 else {
                throw MediaError(.io, operation: "write", item: mp4.path, message: String(cString: strerror(errno)))
            }
            finishedMP4s.insert(name)
        }
    }

    /// Removes the MP4s not renamed into place (the run failed).
    func discardTemporaries() {
        for (name, mp4) in mp4s where !finishedMP4s.contains(name) { unlink(mp4.temporary) }
    }

    /// The playlists (written) and the report.
    func report(plan: TranscodePlan) throws -> TranscodeReport {
        var made: [TranscodeReport.Rendition] = []
        let audioCodec = hasAudio ? "," + CodecString.aacLC : ""
        for rung in renditions {
            guard let record = records[rung.name] else { continue }
            var playlist: String? = nil, initSegment: String? = nil
            var names: [String] = [], durations: [Double] = []
            let sorted = record.segments.sorted { $0.index < $1.index }
            if makesSegments {
                // Each segment spans from its boundary to the next one's (the first from 0, so audio that
                // starts before the video is inside it; the last to the end of its audio or video).
                let grid = plan.grid
                for (n, s) in sorted.enumerated() {
                    names.append(ItemFile.segment(rendition: rung.name, index: s.index).path)
                    let start = n == 0 ? 0 : grid.start(s.index)
                    let next = n + 1 < sorted.count ? grid.start(sorted[n + 1].index) : s.end
                    durations.append(max(0.001, next - start))
                }
                if !sorted.isEmpty {
                    initSegment = ItemFile.initialization(rendition: rung.name).path
                    playlist = ItemFile.mediaPlaylist(rendition: rung.name).path
                    let text = HLSPlaylist.media(initSegment: ItemFile.initialization(rendition: rung.name).name,
                                                 segments: sorted.enumerated().map {
                        (ItemFile.segment(rendition: rung.name, index: $0.element.index).name, durations[$0.offset])
                    })
                    try AtomicFile.write(Array(text.utf8), to: folder.appendingPathComponent(playlist!).path)
                }
            }
            let first = record.firstTime ?? 0
            let duration = max(0, (record.lastEnd ?? first) - first)
            let bytes = sorted.reduce(0) { $0 + $1.bytes }
            let average = duration > 0 ? Int(Double(bytes * 8) / duration) : 0
            made.append(TranscodeReport.Rendition(
                name: rung.name, width: record.width, height: record.height,
                mp4: mp4s[rung.name].map { _ in ItemFile.mp4(rendition: rung.name).path }, playlist: playlist,
                initSegment: initSegment, segments: names, segmentDurations: durations,
                bandwidth: max(record.peakBandwidth, average), averageBandwidth: average, duration: duration,
                frames: record.frames, codecs: record.codecString + audioCodec))
        }
        var master: String? = nil
        if made.contains(where: { $0.playlist != nil }) {
            let text = HLSPlaylist.multivariant(made.compactMap { r in
                r.playlist.map { ($0, r.bandwidth, r.averageBandwidth, r.width, r.height, r.codecs) }
            })
            try AtomicFile.write(Array(text.utf8), to: folder.appendingPathComponent(ItemFile.masterPlaylist.path).path)
            master = ItemFile.masterPlaylist.path
        }
        return TranscodeReport(renditions: made, masterPlaylist: master,
                               previewMP4: madePreviews ? ItemFile.preview.path : nil,
                               previewWebP: madePreviews ? ItemFile.previewWebP.path : nil, hasAudio: hasAudio,
                               wasStill: plan.isStill, deinterlaced: deinterlaced, toneMapped: toneMapped,
                               sourceFrames: plan.isStill ? 1 : sourceFrames)
    }
}
