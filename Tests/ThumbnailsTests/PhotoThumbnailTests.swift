import Foundation
import Media
import TestSupport
import Testing
import Thumbnails

/// Thumbnails of HEIC and AVIF photos (decoded by libheif in Media): upright by their irot/imir, never turned again
/// by an EXIF Orientation, at the upright size.
@Suite struct PhotoThumbnailTests {
    func corners(_ image: Image) -> [Corner?] {
        let inset = 4
        return [(inset, inset), (image.width - 1 - inset, inset), (inset, image.height - 1 - inset),
                (image.width - 1 - inset, image.height - 1 - inset)].map { x, y in
            let p = Array(image.pixel(x: x, y: y))
            return Corner(r: p[0], g: p[1], b: p[2])
        }
    }

    @Test("a HEIC's and an AVIF's thumbnail is upright, with an iPhone-style EXIF Orientation that is not applied again",
          arguments: [(PhotoFixture.Codec.hevc, 6), (.hevc, 7), (.av1, 8), (.av1, 2)])
    func upright(codec: PhotoFixture.Codec, n: Int) throws {
        let folder = try TestFixtures.temporaryFolder("photo-thumb")
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixture = PhotoFixture(codec: codec, orientation: n, exifOrientation: n)
        let path = folder.appendingPathComponent(fixture.name).path
        try fixture.write(to: path)
        let upright = TestFixtures.exifUprightSize(n)
        let result = try ThumbnailRenderer(options: ThumbnailOptions(box: Size(width: upright.width, height: 0)))
            .render(path: path)
        let image = try #require(result.images.first)
        #expect(image.size == Size(width: upright.width, height: upright.height))
        #expect(result.sourceSize == Size(width: upright.width, height: upright.height))
        #expect(corners(image) == TestFixtures.exifCorners(n).map { Optional($0) }, "orientation \(n)")
    }

    @Test("a broken HEIC fails its thumbnail with a MediaError naming it")
    func broken() throws {
        let folder = try TestFixtures.temporaryFolder("photo-thumb")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("cut.heic").path
        let whole = try PhotoFixture().encoded()
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path))
        #expect { try ThumbnailRenderer(options: ThumbnailOptions()).render(path: path) } throws: { error in
            let e = error as? MediaError
            return e?.kind == .invalidData && e?.item == path
        }
    }
}
