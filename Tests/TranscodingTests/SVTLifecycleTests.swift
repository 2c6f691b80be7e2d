import Dispatch
import EngineSupport
import Foundation
import Media
import TestSupport
import Testing
import Transcode

/// SVT-AV1 1.4 keeps process-wide state that an encoder's open writes and its close frees (see
/// `VideoEncoder.svtLifecycle`): AV1 encoders opened, used and closed on several threads at once — a server's
/// workers, a batch's jobs — must all work and never crash the process.
@Suite struct SVTLifecycleTests {
    @Test("AV1 init segments made on four threads at once, 160 encoders opened and closed: every one made, no crash")
    func openAndCloseTogether() throws {
        let folder = try TestFixtures.temporaryFolder("svt-lifecycle")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("clip.mp4").path
        let made = try run(URL(fileURLWithPath: "/usr/bin/env"), [
            "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=180x320:rate=30:duration=1",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", path])
        try #require(made.status == 0, "\(made.stderr)")
        var settings = TranscodeSettings()
        settings.preview = nil
        settings.ladder = [Size(width: 180, height: 320)]
        settings.codecs = [.h264, .av1]
        let both = settings
        let codecs = Locked<[String]>([])
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for _ in 0..<40 {
                do {
                    let transcoder = try Transcoder(file: MediaFile(path: path), settings: both)
                    let av1 = try #require(transcoder.plan.renditions(of: .av1).first)
                    let initialization = try transcoder.initializationSegment(rendition: av1)
                    codecs.withLock { $0.append(initialization.codecs) }
                } catch {
                    failures.withLock { $0.append("thread \(thread): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(codecs.withLock { $0 }.count == 160)
        #expect(Set(codecs.withLock { $0 }).count == 1 && codecs.withLock { $0 }.first?.hasPrefix("av01.") == true)
    }
}
