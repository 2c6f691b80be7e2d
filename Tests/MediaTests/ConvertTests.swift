import Media
import TestSupport
import Testing

@Suite struct ConvertTests {
    func firstFrame(_ name: String) throws -> (VideoFrame, StreamInfo) {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media(name)))
        return (try #require(try decoder.nextFrame()), decoder.stream)
    }

    func isRed(_ p: ArraySlice<UInt8>) -> Bool { p[p.startIndex] > 200 && p[p.startIndex + 1] < 60 && p[p.startIndex + 2] < 60 }
    func isBlue(_ p: ArraySlice<UInt8>) -> Bool { p[p.startIndex] < 60 && p[p.startIndex + 1] < 60 && p[p.startIndex + 2] > 200 }

    @Test("upright output puts the red marker top-left and the blue one bottom-right",
          arguments: ["rotate90.mp4", "rotate270.mp4"])
    func upright(name: String) throws {
        let (frame, stream) = try firstFrame(name)
        let image = try FrameConverter(pixelFormat: .rgb24, orientation: stream.orientation).convert(frame)
        #expect(image.size == Size(width: 240, height: 320))
        #expect(isRed(image.pixel(x: 10, y: 10)))
        #expect(isBlue(image.pixel(x: 229, y: 309)))
        // Without orientation the markers sit elsewhere: the stored picture is sideways.
        let stored = try FrameConverter(pixelFormat: .rgb24).convert(frame)
        #expect(stored.size == Size(width: 320, height: 240))
        #expect(!isRed(stored.pixel(x: 10, y: 10)))
    }

    @Test("fast scaling gives the accurate picture to within a few levels", arguments: [PixelFormat.bgra, .rgb24])
    func fastScaling(format: PixelFormat) throws {
        let (frame, stream) = try firstFrame("h264_portrait.mp4")
        let box = Size(width: 360, height: 640)
        let accurate = try FrameConverter(pixelFormat: format, fittingIn: box, orientation: stream.orientation)
            .convert(frame)
        let fast = try FrameConverter(pixelFormat: format, fittingIn: box, orientation: stream.orientation,
                                      scaling: .fast).convert(frame)
        #expect(fast.size == accurate.size && fast.bytes.count == accurate.bytes.count)
        let differences = zip(fast.bytes, accurate.bytes).map { abs(Int($0) - Int($1)) }
        let mean = Double(differences.reduce(0, +)) / Double(differences.count)
        #expect(mean < 1.0, "mean difference \(mean)")
        #expect(differences.max()! <= 8, "largest difference \(differences.max()!)")
    }

    @Test("thumbnail scaling averages areas on a large reduction and stays close to the bicubic picture")
    func thumbnailScaling() throws {
        let (frame, stream) = try firstFrame("h264_portrait.mp4")
        let box = Size(width: 90, height: 160)
        let bicubic = try FrameConverter(pixelFormat: .rgb24, fittingIn: box, orientation: stream.orientation)
            .convert(frame)
        let area = try FrameConverter(pixelFormat: .rgb24, fittingIn: box, orientation: stream.orientation,
                                      scaling: .thumbnail).convert(frame)
        #expect(area.size == bicubic.size)
        #expect(area.bytes != bicubic.bytes, "a different filter")
        let differences = zip(area.bytes, bicubic.bytes).map { abs(Int($0) - Int($1)) }
        let mean = Double(differences.reduce(0, +)) / Double(differences.count)
        #expect(mean < 4, "mean difference \(mean)")
        // Upright and orientation-correct: the rotated fixture's red marker lands top-left at a quarter of the size.
        let (rotated, rotatedStream) = try firstFrame("rotate90.mp4")
        let small = try FrameConverter(pixelFormat: .rgb24, fittingIn: Size(width: 60, height: 80),
                                       orientation: rotatedStream.orientation, scaling: .thumbnail).convert(rotated)
        #expect(isRed(small.pixel(x: 2, y: 2)) && isBlue(small.pixel(x: 57, y: 77)))
    }

    @Test("every orientation maps a corner marker where the matrix says")
    func allOrientations() throws {
        let (frame, stream) = try firstFrame("rotate90.mp4")
        let upright = try FrameConverter(pixelFormat: .rgb24, orientation: stream.orientation).convert(frame)
        // The stored frame has red bottom-left, blue top-right. Mirror first (red → bottom-right, blue → top-left),
        // then rotate: 270° clockwise gives the upright picture mirrored (red top-right, blue bottom-left) …
        let mirrored = try FrameConverter(pixelFormat: .rgb24, orientation: Orientation(rotation: 270, mirrored: true)).convert(frame)
        #expect(mirrored.size == upright.size)
        #expect(isRed(mirrored.pixel(x: 229, y: 10)))
        #expect(isBlue(mirrored.pixel(x: 10, y: 309)))
        // … and 90° clockwise gives it flipped upside down (red bottom-left, blue top-right).
        let flipped = try FrameConverter(pixelFormat: .rgb24, orientation: Orientation(rotation: 90, mirrored: true)).convert(frame)
        #expect(isRed(flipped.pixel(x: 10, y: 309)))
        #expect(isBlue(flipped.pixel(x: 229, y: 10)))
        let halfTurn = try FrameConverter(pixelFormat: .rgb24, orientation: Orientation(rotation: 180)).convert(frame)
        #expect(halfTurn.size == Size(width: 320, height: 240))
        #expect(isRed(halfTurn.pixel(x: 309, y: 10)))
        let bgra = try FrameConverter(pixelFormat: .bgra, orientation: stream.orientation).convert(frame)
        let p = bgra.pixel(x: 10, y: 10)
        #expect(p[p.startIndex + 2] > 200 && p[p.startIndex] < 60 && p[p.startIndex + 3] == 255)
    }

    @Test("fit keeps the shown aspect ratio inside the box", arguments: [
        ("h264_portrait.mp4", Size(width: 360, height: 360), PixelFormat.rgb24, Size(width: 203, height: 360)),
        ("h264_portrait.mp4", Size(width: 360, height: 360), PixelFormat.yuv420p, Size(width: 202, height: 360)),
        ("odd_161x121.mkv", Size(width: 1000, height: 1000), PixelFormat.rgba, Size(width: 1000, height: 752)),
        ("rotate90.mp4", Size(width: 120, height: 1000), PixelFormat.gray, Size(width: 120, height: 160)),
    ])
    func fit(name: String, box: Size, format: PixelFormat, expected: Size) throws {
        let (frame, stream) = try firstFrame(name)
        let converter = FrameConverter(pixelFormat: format, fittingIn: box, orientation: stream.orientation)
        let image = try converter.convert(frame)
        #expect(image.size == expected)
        #expect(image.bytes.count == format.byteCount(width: expected.width, height: expected.height))
    }

    @Test("odd sizes become even for yuv420p without a box")
    func oddToYUV() throws {
        let (frame, _) = try firstFrame("odd_161x121.mkv")
        let image = try FrameConverter(pixelFormat: .yuv420p).convert(frame)
        #expect(image.size == Size(width: 160, height: 120))
    }

    @Test("10-bit input converts to 8-bit without a colour cast")
    func tenBitToRGB() throws {
        let (frame10, _) = try firstFrame("hevc_10bit.mp4")
        let (frame8, _) = try firstFrame("hevc.mp4")
        let a = try FrameConverter(pixelFormat: .rgb24).convert(frame10)
        let b = try FrameConverter(pixelFormat: .rgb24).convert(frame8)
        // Same source picture, different bit depth: channel means agree closely.
        func means(_ i: Image) -> [Double] {
            (0..<3).map { c in Double(stride(from: c, to: i.bytes.count, by: 3).reduce(0) { $0 + Int(i.bytes[$1]) }) / Double(i.bytes.count / 3) }
        }
        for (x, y) in zip(means(a), means(b)) { #expect(abs(x - y) < 4) }
    }

    @Test("the scaler is reused across frames of one geometry and output is stable")
    func reuse() throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("hevc.mp4")))
        let converter = FrameConverter(pixelFormat: .bgra, fittingIn: Size(width: 100, height: 100))
        var sizes = Set<Size>()
        while let frame = try decoder.nextFrame() { sizes.insert(try converter.convert(frame).size) }
        #expect(sizes == [Size(width: 100, height: 75)])
    }

    @Test("cover art, still images and animated GIFs decode like one- and many-frame videos", arguments: [
        ("cover.mp3", 1), ("image.png", 1), ("image.jpg", 1), ("animated.gif", 10),
    ])
    func stillsAndCovers(name: String, frames: Int) throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media(name)))
        let converter = FrameConverter(pixelFormat: .rgb24, fittingIn: Size(width: 64, height: 64))
        var count = 0
        while let frame = try decoder.nextFrame() {
            _ = try converter.convert(frame)
            count += 1
        }
        #expect(count == frames)
    }
}
