import Foundation
@testable import Media
import TestSupport
import Testing
@testable import Transcode

/// A batch decodes an H.264 MP4 once through, not from each segment's keyframe, and makes the bytes it made before.
@Suite struct ContinuousVideoTests {
    /// The batch of `path` with the shared decode on or off: every rendition's segments by name, and the video
    /// frames decoded.
    static func batch(_ path: String, sharing: Bool, settings: TranscodeSettings = TranscodeTests.single) throws
        -> (files: [String: Data], decoded: Int) {
        let out = try TestFixtures.temporaryFolder("continuous")
        defer { try? FileManager.default.removeItem(at: out) }
        let transcoder = try Transcoder(file: MediaFile(path: path), settings: settings)
        transcoder.sharesVideoDecode = sharing
        let report = try transcoder.run(into: out)
        var files: [String: Data] = [:]
        for rendition in report.renditions {
            let folder = out.appendingPathComponent(rendition.name)
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
                files[rendition.name + "/" + name] = try Data(contentsOf: folder.appendingPathComponent(name))
            }
            if let mp4 = rendition.mp4 { files[mp4] = try Data(contentsOf: out.appendingPathComponent(mp4)) }
        }
        return (files, transcoder.framesDecoded)
    }

    @Test("a long GOP with B-pictures: every picture decoded once, the same files as a decode from each segment's keyframe")
    func longGOP() throws {
        // long_gop_b.mp4: one keyframe, 6 s at 30 fps in 2 s segments (the first 1 s).
        let path = TestFixtures.transcode("long_gop_b.mp4")
        var settings = TranscodeTests.single
        settings.ladder = [Size(width: 720, height: 1280), Size(width: 160, height: 160)]
        let shared = try Self.batch(path, sharing: true, settings: settings)
        let seeking = try Self.batch(path, sharing: false, settings: settings)
        let frames = try TranscodeTests.decode(path).frames
        #expect(shared.decoded == frames, "decoded \(shared.decoded) pictures of \(frames)")
        #expect(seeking.decoded > frames + 30, "decoded \(seeking.decoded) pictures seeking")
        #expect(shared.files.keys.sorted() == seeking.files.keys.sorted())
        for (name, bytes) in seeking.files { #expect(shared.files[name] == bytes, "\(name)") }
    }

    @Test("keyframes that are not IDR pictures (an open GOP): the batch goes back to seeking, and the segments stay the same",
          arguments: [true, false])
    func openGOP(audio: Bool) throws {
        let folder = try TestFixtures.temporaryFolder("continuous-open")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("open.mp4").path
        let made = try run(URL(fileURLWithPath: "/usr/bin/env"), [
            "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=5",
        ] + (audio ? ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=5", "-c:a", "aac"] : [])
            + ["-c:v", "libx264", "-x264-params", "open-gop=1:keyint=45:scenecut=0", "-bf", "3", path])
        try #require(made.status == 0, "\(made.stderr)")
        let shared = try Self.batch(path, sharing: true)
        let seeking = try Self.batch(path, sharing: false)
        #expect(shared.files.keys.sorted() == seeking.files.keys.sorted())
        for (name, bytes) in seeking.files { #expect(shared.files[name] == bytes, "\(name)") }
        // The first keyframe is an IDR picture, the next are not: from the segment after it, each seeks.
        #expect(shared.decoded > 150, "decoded \(shared.decoded)")
    }
}
