import Foundation
import Media
import TestSupport
import Testing
import Transcode

/// An AV1 rendition is listed (serve's card and master playlist) before it is encoded: its codecs string comes from
/// the pictures its H.264 twin was encoded at, and must be the one SVT-AV1 writes when it is made.
@Suite struct AV1ListingTests {
    @Test("the AV1 level of a size and frame rate: the AV1 specification's table, as libsvtav1 1.4 chose it on a grid of 64")
    func levelTable() {
        // (width, height, rate, seq_level_idx) as `ffmpeg -c:v libsvtav1` wrote them for testsrc2 (level 2.0 to 5.2).
        let measured: [(Int, Int, Double, Int)] = [
            (180, 320, 30, 0), (180, 320, 60, 0), (360, 640, 30, 1), (360, 640, 60, 4), (540, 960, 30, 4),
            (540, 960, 60, 5), (720, 1280, 30, 5), (1280, 720, 30, 5), (720, 1280, 60, 8), (1080, 1920, 30, 8),
            (1080, 1920, 60, 9), (1080, 1920, 120, 12), (2160, 3840, 30, 12), (2160, 3840, 60, 13),
            (2160, 3840, 120, 14), (360, 640, 30_000.0 / 1001, 1), (720, 1280, 24_000.0 / 1001, 5),
        ]
        for (width, height, rate, level) in measured {
            #expect(CodecString.av1(width: width, height: height, frameRate: rate)
                    == "av01.0.\(String(format: "%02d", level))M.08", "\(width)x\(height) at \(rate)")
        }
    }

    @Test("an AV1 rendition's listed codecs string is the one its encoder writes, at the sizes and rates that change its level",
          arguments: ["1080x1920:60", "1080x1920:30", "1280x720:50", "720x1280:30000/1001", "404x720:24"])
    func listedCodecsAreTheEncoders(source: String) throws {
        let parts = source.split(separator: ":")
        let folder = try TestFixtures.temporaryFolder("av1-listing")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("clip.mp4").path
        let made = try run(URL(fileURLWithPath: "/usr/bin/env"), [
            "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
            "-i", "testsrc2=size=\(parts[0]):rate=\(parts[1]):duration=1.2",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1.2", "-c:a", "aac",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", path])
        try #require(made.status == 0, "\(made.stderr)")
        var settings = TranscodeSettings()
        settings.preview = nil
        settings.codecs = [.h264, .av1]
        let transcoder = try Transcoder(file: MediaFile(path: path), settings: settings)
        let plan = transcoder.plan
        let ladder = plan.renditions(of: .h264), av1 = plan.renditions(of: .av1)
        #expect(!av1.isEmpty && av1.count == ladder.count)
        // Nothing is known before a pass opened the twins' encoders.
        #expect(av1.allSatisfy { transcoder.listedCodecs(rendition: $0) == nil })
        _ = try transcoder.segments(0, renditions: ladder)
        #expect(ladder.allSatisfy { transcoder.listedCodecs(rendition: $0) == nil })
        let listed = av1.map { transcoder.listedCodecs(rendition: $0) }
        for (r, codecs) in zip(av1, listed) {
            let encoded = try transcoder.initializationSegment(rendition: r).codecs
            #expect(codecs == encoded, "\(plan.renditions[r].name) of \(source): listed \(codecs ?? "nil"), encoded \(encoded)")
        }
    }
}
