import Feed
import Foundation
import Media
import TestSupport
import Testing
import Transcode

/// The plan's segment count — what a server lists before any segment exists — is the number of segments the batch
/// makes, on every fixture: a container whose audio outlasts its video (the interlaced TS) lists no empty last
/// segment.
@Suite struct SegmentCountTests {
    @Test func thePlanCountsTheSegmentsTheBatchMakes() async throws {
        let root = try TestFixtures.temporaryFolder("segment-count")
        let source = root.appendingPathComponent("feed")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        let names = try FileManager.default.contentsOfDirectory(atPath: TestFixtures.folder.appendingPathComponent("transcode").path)
            .filter { !$0.hasSuffix(".md") && !$0.hasSuffix(".sh") }
        for name in names {
            try FileManager.default.copyItem(atPath: TestFixtures.transcode(name),
                                             toPath: source.appendingPathComponent(name).path)
        }
        for name in ["h264_portrait.mp4", "vfr.mp4", "vp9.webm", "animated.gif", "mpeg4.avi", "av1.mp4", "image.jpg"] {
            try FileManager.default.copyItem(atPath: TestFixtures.media(name), toPath: source.appendingPathComponent(name).path)
        }
        var settings = TranscodeSettings()
        settings.ladder = [Size(width: 360, height: 640)]
        settings.preview = nil
        settings.makesMP4 = false
        let items = try await DirectoryFeedLoader(root: source).loadAll().items
        let out = root.appendingPathComponent("out")
        let summary = try TranscodeBatch(feed: items, configuration: .init(output: out, settings: settings, jobs: 2)).run()
        #expect(summary.failures.isEmpty)
        let records = RenditionFile.read(summary.recordFile).records
        #expect(records.count == items.count)
        for record in records {
            let path = source.appendingPathComponent((record.source as NSString).lastPathComponent).path
            let file = try MediaFile(path: path, options: TranscodeBatch.defaultOpenOptions)
            let plan = try TranscodePlan(info: file.info, settings: settings, item: path)
            #expect(plan.segmentCount == record.renditions.first?.segmentCount, "\(record.publicID)")
        }
        #expect(names.contains("interlaced.ts"))
    }
}
