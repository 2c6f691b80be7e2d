import EngineSupport
import Foundation
import Media
import TestSupport
import Testing
import Transcode

/// HEIC and AVIF photos through libheif (`MediaFile+Photo`): upright by their `irot`/`imir` properties and never
/// turned again by their EXIF Orientation, sized, coloured and bounded; typed errors for broken ones. The photos are
/// made by ``PhotoFixture`` with libheif's encoders; the real iPhone files are checked by scripts/conformance.sh.
@Suite struct PhotoTests {
    /// The picture of `file` as shown: its first frame, upright, as packed RGB(A).
    static func shown(_ file: MediaFile, format: PixelFormat = .rgb24) throws -> (Image, VideoFrame) {
        let frame = try #require(try VideoDecoder(file: file).nextFrame())
        return (try FrameConverter(pixelFormat: format, upright: true).convert(frame), frame)
    }

    static func corners(_ image: Image) -> [Corner?] {
        let inset = 4
        return [(inset, inset), (image.width - 1 - inset, inset), (inset, image.height - 1 - inset),
                (image.width - 1 - inset, image.height - 1 - inset)].map { x, y in
            let p = Array(image.pixel(x: x, y: y))
            return Corner(r: p[0], g: p[1], b: p[2])
        }
    }

    static func open(_ fixture: PhotoFixture, options: OpenOptions = OpenOptions(),
                     cancellation: CancellationToken? = nil) throws -> MediaFile {
        try MediaFile(data: fixture.encoded(), name: fixture.name, options: options, cancellation: cancellation)
    }

    @Test("a HEIC is upright by its irot/imir, mirrored ones included, and shown at its upright size",
          arguments: 1...8)
    func uprightHEIC(n: Int) throws {
        let file = try Self.open(PhotoFixture(orientation: n))
        let upright = TestFixtures.exifUprightSize(n)
        let photo = try #require(file.info.photo)
        #expect(photo.format == "heif" && photo.codec == "hevc" && photo.majorBrand == "heic")
        #expect(photo.width == upright.width && photo.height == upright.height)
        let stream = try #require(file.info.primaryVideoStream)
        #expect(file.info.container == "pam_pipe" && stream.codec == "pam" && stream.pixelFormat == "rgb24")
        #expect(stream.displaySize == Size(width: upright.width, height: upright.height))
        #expect(stream.orientation == .identity)
        let (image, frame) = try Self.shown(file)
        #expect(frame.orientation == .identity, "libheif turned it; nothing is left to turn")
        #expect(image.size == Size(width: upright.width, height: upright.height))
        #expect(Self.corners(image) == TestFixtures.exifCorners(n).map { Optional($0) }, "orientation \(n)")
    }

    @Test("an AVIF is upright by its irot/imir", arguments: [1, 3, 6, 7])
    func uprightAVIF(n: Int) throws {
        let file = try Self.open(PhotoFixture(codec: .av1, orientation: n))
        #expect(file.info.photo?.format == "avif" && file.info.photo?.codec == "av1")
        let (image, _) = try Self.shown(file)
        let upright = TestFixtures.exifUprightSize(n)
        #expect(image.size == Size(width: upright.width, height: upright.height))
        #expect(Self.corners(image) == TestFixtures.exifCorners(n).map { Optional($0) }, "orientation \(n)")
    }

    @Test("a HEIF's EXIF Orientation is never applied: not on top of irot (as an iPhone writes both), not alone",
          arguments: [(6, 6), (8, 8), (1, 6), (3, 8)])
    func exifIgnored(transform: Int, exif: Int) throws {
        let fixture = PhotoFixture(orientation: transform, exifOrientation: exif)
        let file = try Self.open(fixture)
        #expect(try file.infoWithPictureOrientation().primaryVideoStream?.orientation == .identity)
        let (image, _) = try Self.shown(try Self.open(fixture))
        #expect(Self.corners(image) == TestFixtures.exifCorners(transform).map { Optional($0) })
    }

    // Only HEVC: libheif 1.15's libaom plugin picks AV1 profile 2 for any deep image, and libaom asserts on 10-bit
    // 4:2:0 in it, so no 10-bit AVIF can be made here (scripts/conformance.sh decodes real ones from a folder).
    @Test("a 10-bit HEIC decodes to the 8-bit picture, upright")
    func tenBit() throws {
        let file = try Self.open(PhotoFixture(codec: .hevc, orientation: 6, bitDepth: 10))
        #expect(file.info.photo?.bitDepth == 10)
        #expect(file.info.primaryVideoStream?.pixelFormat == "rgb24")
        let (image, _) = try Self.shown(file)
        #expect(Self.corners(image) == TestFixtures.exifCorners(6).map { Optional($0) })
    }

    @Test("a photo with alpha keeps it: rgba, transparent where the alpha plane is", arguments: [PhotoFixture.Codec.hevc, .av1])
    func alpha(codec: PhotoFixture.Codec) throws {
        let file = try Self.open(PhotoFixture(codec: codec, alpha: true))
        #expect(file.info.photo?.hasAlpha == true)
        #expect(file.info.primaryVideoStream?.pixelFormat == "rgba")
        let (image, _) = try Self.shown(file, format: .rgba)
        #expect(image.pixel(x: 4, y: 4).last ?? 0 > 240)
        #expect(image.pixel(x: 59, y: 43).last ?? 255 < 15)
        #expect(Array(image.pixel(x: 4, y: 4)).prefix(3).elementsEqual([255, 0, 0], by: { abs(Int($0) - Int($1)) < 40 }))
    }

    @Test("a photo opened from a path is the same as from memory, and plans as a still")
    func fromPath() throws {
        let folder = try TestFixtures.temporaryFolder("photo")
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixture = PhotoFixture(orientation: 8)
        let path = folder.appendingPathComponent(fixture.name).path
        try fixture.write(to: path)
        let file = try MediaFile(path: path, options: .untrusted())
        #expect(file.info.photo?.width == 48 && file.info.photo?.height == 64)
        let plan = try TranscodePlan(info: file.info, settings: TranscodeSettings(), item: path)
        #expect(plan.isStill)
        let (image, _) = try Self.shown(file)
        #expect(Self.corners(image) == TestFixtures.exifCorners(8).map { Optional($0) })
    }

    @Test("declared sizes over the limits are refused before decoding, naming the item")
    func limits() throws {
        var small = OpenOptions()
        small.maxDimension = 40
        #expect { try Self.open(PhotoFixture(), options: small) } throws: { error in
            let e = error as? MediaError
            return e?.kind == .limitExceeded && e?.item.hasSuffix(".heic") == true
        }
        var few = OpenOptions()
        few.maxPixelCount = 1000
        #expect { try Self.open(PhotoFixture(), options: few) } throws: { error in
            (error as? MediaError)?.kind == .limitExceeded && "\(error)".contains("pixels")
        }
    }

    @Test("a cancelled token stops a photo before libheif runs; a feed that does not allow heif refuses it")
    func cancelAndPolicy() throws {
        let token = CancellationToken()
        token.cancel()
        #expect { try Self.open(PhotoFixture(), cancellation: token) } throws: { error in
            (error as? MediaError)?.kind == .cancelled
        }
        var options = OpenOptions.untrusted()
        options.allowedFormats?.remove("heif")
        #expect { try Self.open(PhotoFixture(), options: options) } throws: { error in
            (error as? MediaError)?.kind == .policyViolation
        }
    }

    /// Broken photos, made from a good one.
    enum Damage: String, CaseIterable, Sendable {
        case zeroLength, truncatedHalf, truncatedHeader, garbageAfterFtyp, corruptMeta, corruptPicture
    }

    static func damaged(_ damage: Damage) throws -> Data {
        let good = try PhotoFixture(orientation: 6).encoded()
        var bytes = [UInt8](good)
        switch damage {
        case .zeroLength: bytes = []
        case .truncatedHalf: bytes = Array(bytes.prefix(bytes.count / 2))
        case .truncatedHeader: bytes = Array(bytes.prefix(40))
        case .garbageAfterFtyp:
            let ftyp = Int(bytes[3])
            var rng = SystemRandomNumberGenerator()
            bytes = Array(bytes.prefix(ftyp)) + (0..<4000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        case .corruptMeta:
            let ftyp = Int(bytes[3])
            for i in (ftyp + 12)..<min(ftyp + 200, bytes.count) { bytes[i] = 0xA5 }
        case .corruptPicture:
            for i in stride(from: bytes.count - 300, to: bytes.count, by: 3) { bytes[i] ^= 0x5A }
        }
        return Data(bytes)
    }

    @Test("a broken photo is a typed MediaError naming the item, never a crash", arguments: Damage.allCases)
    func broken(damage: Damage) throws {
        let folder = try TestFixtures.temporaryFolder("photo")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("broken-\(damage.rawValue).heic").path
        try Self.damaged(damage).write(to: URL(fileURLWithPath: path))
        do {
            let file = try MediaFile(path: path, options: .untrusted())
            let (image, _) = try Self.shown(file)
            // Damage inside the coded picture may still decode (to a damaged picture): never to another size.
            #expect(damage == .corruptPicture, "\(damage) opened and decoded")
            #expect(image.size == Size(width: 48, height: 64))
        } catch let error as MediaError {
            #expect(error.item == path)
            #expect([.invalidData, .unsupportedFormat, .unsupportedCodec].contains(error.kind), "\(error)")
        }
    }

    @Test("image sequence brands alone stay with FFmpeg, which fails them as an MP4 would")
    func sequenceBrandsStayWithFFmpeg() throws {
        var bytes: [UInt8] = [0, 0, 0, 20] + Array("ftypmsf1".utf8) + [0, 0, 0, 0] + Array("msf1".utf8)
        bytes += [UInt8](repeating: 0, count: 64)
        #expect { try MediaFile(data: Data(bytes), name: "burst.heic") } throws: { error in
            let e = error as? MediaError
            return e != nil && e?.message.hasPrefix("libheif") == false
        }
    }
}
