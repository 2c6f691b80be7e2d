import Feed
import Foundation
import Media
import TestSupport
import Testing
import Transcode

/// A HEIC photo in a transcode batch becomes the same still rendition a JPEG does: a silent H.264 video of the
/// still duration, upright (the photo's irot applied once).
@Suite struct PhotoTranscodeTests {
    @Test("a HEIC and an AVIF in a batch become still renditions at their upright shape; a broken one fails alone")
    func stillRendition() throws {
        let root = try TestFixtures.temporaryFolder("photo-batch")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = root.appendingPathComponent("feed")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        var items: [FeedItem] = []
        for (id, fixture) in [("turned", PhotoFixture(orientation: 6, exifOrientation: 6)),
                              ("fox", PhotoFixture(codec: .av1))] {
            let url = source.appendingPathComponent(fixture.name)
            try fixture.write(to: url.path)
            items.append(FeedItem(publicID: id, createdAt: Date(timeIntervalSince1970: 0), source: url))
        }
        let broken = source.appendingPathComponent("garbage.heic")
        try Data([0, 0, 0, 24] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)
                 + [UInt8](repeating: 0x5A, count: 2000)).write(to: broken)
        items.append(FeedItem(publicID: "garbage", createdAt: Date(timeIntervalSince1970: 0), source: broken))

        var settings = TranscodeSettings()
        settings.ladder = [Size(width: 360, height: 640)]
        settings.preview = nil
        let out = root.appendingPathComponent("out")
        var configuration = TranscodeBatch.Configuration(output: out, settings: settings, jobs: 1, force: false)
        configuration.timeLimit = 120
        let summary = try TranscodeBatch(feed: items, configuration: configuration).run()
        #expect(summary.transcoded == 2 && summary.failures.map(\.item) == ["garbage"], "\(summary.failures)")
        #expect(summary.failures.first?.description.contains("libheif") == true, "\(summary.failures)")

        let records = RenditionFile.read(out.appendingPathComponent("renditions.jsonl")).records
        let turned = try #require(records.first { $0.publicID == "turned" })
        #expect(turned.status == .ok && turned.still == true && turned.hasAudio != true)
        // Never scaled up: the 48x64 upright (portrait) picture as it is; the stored 64x48 would be landscape.
        #expect(turned.renditions.first.map { "\($0.width)x\($0.height)" } == "48x64")
        let fox = try #require(records.first { $0.publicID == "fox" })
        #expect(fox.renditions.first.map { "\($0.width)x\($0.height)" } == "64x48")
        let mp4 = try #require(turned.paths.first { $0.hasSuffix(".mp4") })
        let made = try MediaFile(path: out.appendingPathComponent(mp4).path)
        let video = try #require(made.info.primaryVideoStream)
        #expect(video.codec == "h264" && video.orientation == .identity)
        let frame = try #require(try VideoDecoder(file: made).nextFrame())
        let image = try FrameConverter(pixelFormat: .rgb24).convert(frame)
        let p = Array(image.pixel(x: 20, y: 20))
        #expect(Corner(r: p[0], g: p[1], b: p[2]) == TestFixtures.exifCorners(6)[0], "top-left of the upright picture")
    }
}
