import Media
import TestSupport
import Testing

/// Opening, decoding, converting and closing a fixture 500 times keeps resident memory flat.
/// Measures this process's RSS, so `make test` runs it alone (VIDEOFEED_ISOLATED=1); `make test-sanitizers` runs it
/// under AddressSanitizer too, where LeakSanitizer checks at exit instead of the RSS bound.
@Suite(.serialized, .enabled(if: isolatedRun, "memory test: runs alone under make test"))
struct LeakTests {
    @Test("500 open/decode/close cycles stay within 10 MB")
    func openDecodeClose() throws {
        let path = TestFixtures.media("hevc.mp4")
        func cycle() throws {
            let decoder = try VideoDecoder(file: MediaFile(path: path))
            let converter = FrameConverter(pixelFormat: .rgba, fittingIn: Size(width: 160, height: 160))
            while let frame = try decoder.nextFrame() { _ = try converter.convert(frame) }
        }
        for _ in 0..<50 { try cycle() }  // warm up allocator pools and FFmpeg's static tables
        let before = residentBytes()
        for _ in 0..<500 { try cycle() }
        let after = residentBytes()
        let growth = after - before
        if !sanitizerRun { #expect(growth < 10 * 1024 * 1024, "RSS grew by \(growth / 1024) KiB") }
    }

    @Test("500 failed opens leak nothing")
    func failedOpens() throws {
        for _ in 0..<50 { _ = try? MediaFile(path: TestFixtures.bad("truncated.mp4")) }
        let before = residentBytes()
        for _ in 0..<500 { _ = try? MediaFile(path: TestFixtures.bad("truncated.mp4")) }
        if !sanitizerRun { #expect(residentBytes() - before < 10 * 1024 * 1024) }
    }
}
