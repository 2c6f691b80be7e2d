import Media
import TestSupport
import Testing
import Thumbnails

/// Thumbnails show a picture as a person should see it: a photo turned by its EXIF Orientation (the frame's display
/// matrix, which FFmpeg's JPEG decoder attaches to the frame and never to the stream), an interlaced video without
/// combs.
@Suite struct ShownPictureTests {
    func corners(_ image: Image) -> [Corner?] {
        let inset = 4
        return [(inset, inset), (image.width - 1 - inset, inset), (inset, image.height - 1 - inset),
                (image.width - 1 - inset, image.height - 1 - inset)].map { x, y in
            let p = Array(image.pixel(x: x, y: y))
            return Corner(r: p[0], g: p[1], b: p[2])
        }
    }

    @Test("a photo's thumbnail is upright by its EXIF Orientation, mirrored ones included", arguments: 1...8)
    func exifOrientation(n: Int) throws {
        let upright = TestFixtures.exifUprightSize(n)
        let result = try ThumbnailRenderer(options: ThumbnailOptions(box: Size(width: upright.width, height: 0)))
            .render(path: TestFixtures.orientation(n))
        let image = try #require(result.images.first)
        #expect(image.size == Size(width: upright.width, height: upright.height))
        #expect(corners(image) == TestFixtures.exifCorners(n).map { Optional($0) }, "EXIF Orientation \(n)")
        #expect(result.sourceSize == Size(width: upright.width, height: upright.height))
    }

    @Test("a square thumbnail of a turned photo covers the square with the upright picture")
    func squarePhoto() throws {
        let image = try ThumbnailRenderer(options: ThumbnailOptions(box: Size(width: 48, height: 0), square: true))
            .render(path: TestFixtures.orientation(6)).images[0]
        #expect(image.size == Size(width: 48, height: 48))
        // The center 48x48 of the 48x64 upright picture: blue and red blocks cut to their lower/upper 8 rows.
        let p = Array(image.pixel(x: 4, y: 2)), q = Array(image.pixel(x: 43, y: 45))
        #expect(Corner(r: p[0], g: p[1], b: p[2]) == .blue && Corner(r: q[0], g: q[1], b: q[2]) == .green)
    }

    @Test("an interlaced video's thumbnail does not comb", arguments: [FramePosition.fraction(0.1), .seconds(1), .auto])
    func noCombing(position: FramePosition) throws {
        let path = TestFixtures.transcode("interlaced.ts")
        // At its stored size (720x576), so no scaling blurs the comb away.
        let result = try ThumbnailRenderer(options: ThumbnailOptions(positions: [position],
                                                                     box: Size(width: 720, height: 0)))
            .render(path: path)
        let image = try #require(result.images.first)
        #expect(image.size == Size(width: 720, height: 576))
        let shown = Combing.strength(rgb: image.bytes, width: 720, height: 576)
        // The same frame as decoded combs: the fixture tests what it claims to.
        let decoder = try VideoDecoder(file: MediaFile(path: path))
        var raw: VideoFrame? = nil
        while let f = try decoder.nextFrame() {
            raw = f
            if let t = f.time, let wanted = result.times[0], t >= wanted - 0.001 { break }
        }
        let decoded = try FrameConverter(pixelFormat: .rgb24).convert(try #require(raw))
        let woven = Combing.strength(rgb: decoded.bytes, width: 720, height: 576)
        #expect(woven > 0.6, "the decoded frame combs: \(woven)")
        #expect(shown < 0.3, "thumbnail comb strength \(shown) (decoded \(woven))")
    }
}
