import Foundation
import Media
import TestSupport
import Testing

@Suite struct EncoderTests {
    func sample(_ format: PixelFormat = .rgb24) throws -> Image {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("black_start.mp4")))
        try decoder.seek(to: 2.0, mode: .exact)
        return try FrameConverter(pixelFormat: format).convert(try #require(try decoder.nextFrame()))
    }

    func decodeBack(_ bytes: [UInt8], ext: String) throws -> Image {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("x.\(ext)").path
        try AtomicFile.write(bytes, to: path)
        let decoder = try VideoDecoder(file: MediaFile(path: path))
        return try FrameConverter(pixelFormat: .rgb24).convert(try #require(try decoder.nextFrame()))
    }

    func meanDifference(_ a: Image, _ b: Image) -> Double {
        Double(zip(a.bytes, b.bytes).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.bytes.count)
    }

    @Test("PNG is lossless: decoding it back gives the same pixels")
    func pngRoundTrip() throws {
        let image = try sample()
        let bytes = try ImageEncoder(format: .png).encode(image)
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(try decodeBack(bytes, ext: "png") == image)
    }

    @Test("JPEG and WebP decode back close to the source, and quality trades size", arguments: [ImageFormat.jpeg, .webp])
    func lossy(format: ImageFormat) throws {
        let image = try sample()
        let high = try ImageEncoder(format: format, quality: 95).encode(image)
        let low = try ImageEncoder(format: format, quality: 10).encode(image)
        #expect(low.count < high.count)
        if format == .jpeg { #expect(high.starts(with: [0xFF, 0xD8, 0xFF])) }
        if format == .webp { #expect(Array(high[8..<12]) == Array("WEBP".utf8)) }
        let back = try decodeBack(high, ext: format.fileExtension)
        #expect(back.size == image.size)
        #expect(meanDifference(back, image) < 6)
    }

    @Test("every pixel format encodes to every image format", arguments: PixelFormat.allCases)
    func allInputs(pixelFormat: PixelFormat) throws {
        let image = try sample(pixelFormat)
        for format in ImageFormat.allCases {
            #expect(try !ImageEncoder(format: format).encode(image).isEmpty)
        }
    }

    @Test("PPM is written directly: header and raw RGB")
    func ppm() throws {
        let image = try sample()
        let bytes = try ImageEncoder(format: .ppm).encode(image)
        let header = Array("P6\n320 240\n255\n".utf8)
        #expect(Array(bytes.prefix(header.count)) == header)
        #expect(Array(bytes.dropFirst(header.count)) == image.bytes)
        let gray = try ImageEncoder(format: .ppm).encode(try sample(.gray))
        #expect(gray.starts(with: Array("P5\n".utf8)))
    }

    @Test("writing is atomic: a failed write leaves nothing behind")
    func atomicWrite() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("out.png").path
        try ImageEncoder(format: .png).write(try sample(), to: path)
        #expect(FileManager.default.fileExists(atPath: path))
        let missing = folder.appendingPathComponent("no/such/folder/out.png").path
        #expect(throws: MediaError.self) { try ImageEncoder(format: .png).write(try sample(), to: missing) }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(leftovers == ["out.png"])
    }
}
