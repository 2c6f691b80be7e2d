import Foundation
import Media
import TestSupport
import Testing

/// ``VideoFrame/orientation`` (the stream's display matrix, else the frame's own) and ``Deinterlacer``.
@Suite struct ShownFrameMediaTests {
    func firstFrame(_ path: String) throws -> VideoFrame {
        try #require(try VideoDecoder(file: MediaFile(path: path)).nextFrame())
    }

    @Test("a JPEG frame carries its EXIF Orientation; the stream carries none", arguments: 1...8)
    func exifFrame(n: Int) throws {
        let expected: [Orientation] = [
            .identity, Orientation(mirrored: true), Orientation(rotation: 180), Orientation(rotation: 180, mirrored: true),
            Orientation(rotation: 270, mirrored: true), Orientation(rotation: 90), Orientation(rotation: 90, mirrored: true),
            Orientation(rotation: 270),
        ]
        let file = try MediaFile(path: TestFixtures.orientation(n))
        #expect(file.info.primaryVideoStream?.orientation == .identity)
        let frame = try #require(try VideoDecoder(file: file).nextFrame())
        #expect(frame.orientation == expected[n - 1])
        let upright = try FrameConverter(pixelFormat: .rgb24, upright: true).convert(frame)
        #expect(upright.size == FrameConverter(pixelFormat: .rgb24, upright: true).outputSize(for: frame))
        // A converter with a fixed orientation keeps applying it, whatever the frame says.
        #expect(try FrameConverter(pixelFormat: .rgb24).convert(frame).size == Size(width: 64, height: 48))
    }

    @Test("where the stream has a display matrix it wins over the frame's")
    func streamWins() throws {
        let path = TestFixtures.folder.appendingPathComponent("orientation/stream_matrix.mov").path
        let frame = try firstFrame(path)
        #expect(frame.orientation == Orientation(rotation: 180))
        let image = try FrameConverter(pixelFormat: .rgb24, upright: true).convert(frame)
        #expect(image.size == Size(width: 64, height: 48))
        let p = Array(image.pixel(x: 4, y: 4))
        #expect(Corner(r: p[0], g: p[1], b: p[2]) == .grey)  // stored bottom-right, turned 180°
        // infoWithPictureOrientation leaves a stream's own matrix alone.
        #expect(try MediaFile(path: path).infoWithPictureOrientation().primaryVideoStream?.orientation
                == Orientation(rotation: 180))
    }

    @Test("a progressive item passes through the deinterlacer untouched")
    func progressive() throws {
        let path = TestFixtures.media("h264_portrait.mp4")
        let plain = try VideoDecoder(file: MediaFile(path: path))
        let deinterlacer = try Deinterlacer(decoder: VideoDecoder(file: MediaFile(path: path)))
        var count = 0
        while let a = try plain.nextFrame() {
            let b = try #require(try deinterlacer.nextFrame())
            #expect(a.packedMD5() == b.packedMD5() && a.time == b.time)
            count += 1
        }
        #expect(try deinterlacer.nextFrame() == nil)
        #expect(deinterlacer.isActive == false && count > 0)
    }

    @Test("an interlaced item gives one progressive frame per decoded frame, at the decoder's times, after a seek too")
    func interlaced() throws {
        let path = TestFixtures.transcode("interlaced.ts")
        let plain = try VideoDecoder(file: MediaFile(path: path))
        var times: [Double?] = []
        while let f = try plain.nextFrame() {
            #expect(f.isInterlaced)
            times.append(f.time)
        }
        let deinterlacer = try Deinterlacer(decoder: VideoDecoder(file: MediaFile(path: path)))
        var shown: [Double?] = []
        while let f = try deinterlacer.nextFrame() {
            #expect(!f.isInterlaced)
            shown.append(f.time)
        }
        #expect(deinterlacer.isActive == true)
        #expect(shown == times && times.count == 50)
        try deinterlacer.seek(to: 0, mode: .fast)
        let again = try #require(try deinterlacer.nextFrame())
        #expect(again.time == times[0] && !again.isInterlaced)
    }
}
