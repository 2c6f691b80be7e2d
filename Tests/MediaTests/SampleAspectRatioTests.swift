import Media
import TestSupport
import Testing

/// The sample aspect ratio is the one FFmpeg takes (`av_guess_sample_aspect_ratio`): the container's when it is
/// valid, else the bitstream's — in both stream-information modes, and on decoded frames. The fixtures are made by
/// Fixtures/aspect/generate.sh, which checks each against ffprobe.
@Suite struct SampleAspectRatioTests {
    struct Case: Sendable, CustomStringConvertible {
        var file: String
        /// What ffprobe reports (stream and frames alike).
        var sar: Rational
        /// ffprobe's display_aspect_ratio.
        var displayAspect: Rational
        /// The upright size a player shows.
        var shown: Size
        var description: String { file }
    }

    static let cases = [
        // H.263 QCIF: the picture header implies 12:11, the 3GP pasp box says 1:1.
        Case(file: "h263_qcif.3gp", sar: Rational(1, 1), displayAspect: Rational(11, 9),
             shown: Size(width: 176, height: 144)),
        // A Samsung slow-motion clip's shape: VUI 27:64, pasp 1:1.
        Case(file: "pasp_over_vui.mp4", sar: Rational(1, 1), displayAspect: Rational(4, 3),
             shown: Size(width: 160, height: 120)),
        // No pasp: the VUI's 27:64 is the one.
        Case(file: "vui_only.mp4", sar: Rational(27, 64), displayAspect: Rational(9, 16),
             shown: Size(width: 68, height: 120)),
    ]

    static let modes: [StreamInfoMode] = [.probe, .header]

    @Test("the stream's sample aspect ratio is ffprobe's in every mode", arguments: cases, modes)
    func stream(_ c: Case, mode: StreamInfoMode) throws {
        let file = try MediaFile(path: TestFixtures.aspect(c.file), options: OpenOptions(streamInfo: mode))
        let video = try #require(file.info.primaryVideoStream)
        #expect(video.sampleAspectRatio == c.sar)
        #expect(video.displayAspectRatio == c.displayAspect)
        #expect(video.displaySize == c.shown)
    }

    @Test("decoded frames carry the sample aspect ratio FFmpeg gives them", arguments: cases, modes)
    func frames(_ c: Case, mode: StreamInfoMode) throws {
        let file = try MediaFile(path: TestFixtures.aspect(c.file), options: OpenOptions(streamInfo: mode))
        let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: 1))
        let frame = try #require(try decoder.nextFrame())
        #expect(frame.sampleAspectRatio == c.sar)
        let converter = FrameConverter(pixelFormat: .rgb24, fittingIn: Size(width: 320, height: 1280))
        let image = try converter.convert(frame)
        // Fitted to 320 wide: the stored height scaled by 320 over the shown (SAR-corrected) width.
        let expected = 320 * Double(frame.height) / (Double(frame.width) * (c.sar.value ?? 1))
        #expect(image.width == 320)
        #expect(abs(Double(image.height) - expected) <= 1, "\(image.width)x\(image.height)")
    }
}
