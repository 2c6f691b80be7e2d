import Media
import TestSupport
import Testing
import Thumbnails

/// Thumbnails take the sample aspect ratio FFmpeg takes (the container's over the bitstream's): Fixtures/aspect/.
@Suite struct AspectRatioTests {
    @Test("a thumbnail 320 wide has ffprobe's display aspect", arguments: [
        // 11:9 (pasp 1:1), not 4:3 (the H.263 picture format's implied 12:11).
        ("h263_qcif.3gp", Size(width: 320, height: 262)),
        // 4:3 (pasp 1:1), not the 320x569 the VUI's 27:64 gives: the Samsung slow-motion clip of issue 15.
        ("pasp_over_vui.mp4", Size(width: 320, height: 240)),
        // 9:16: no pasp, so the VUI's 27:64 stands.
        ("vui_only.mp4", Size(width: 320, height: 569)),
    ])
    func displayAspect(name: String, size: Size) throws {
        for mode in [StreamInfoMode.header, .probe] {
            let renderer = ThumbnailRenderer(openOptions: OpenOptions(streamInfo: mode))
            let result = try renderer.render(path: TestFixtures.aspect(name))
            #expect(result.images.first?.size == size, "\(mode)")
            // The card's source size (the shown size, rounded to whole pixels) has the same shape.
            let source = result.sourceSize
            #expect(abs(Double(source.width) / Double(source.height) - Double(size.width) / Double(size.height))
                    < 0.02, "\(source)")
        }
    }
}
