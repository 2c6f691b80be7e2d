@testable import Media
import TestSupport
import Testing

@Suite struct ProbeTests {
    @Test("probe agrees with ffprobe on every fixture", arguments: TestFixtures.expected)
    func matchesFFprobe(expected: TestFixtures.Expected) throws {
        let info = try MediaFile(path: TestFixtures.media(expected.file)).info
        let video = try #require(info.primaryVideoStream)
        #expect(video.codec == expected.codec)
        #expect(video.width == expected.width)
        #expect(video.height == expected.height)
        #expect(video.pixelFormat == expected.pixelFormat)
        #expect(video.bitDepth == expected.bitDepth)
        #expect(video.rotation == expected.rotation)
        #expect(video.isAttachedPicture == expected.attachedPicture)
        #expect(video.averageFrameRate.description == expected.averageFrameRate)
        if let duration = expected.duration {
            // Within one frame.
            let frame = 1 / (video.averageFrameRate.value ?? 25)
            #expect(abs((info.duration ?? -1) - duration) <= frame)
        }
    }

    @Test("rotation 90 and 270 from the display matrix, and the shown size swaps")
    func rotation() throws {
        let r90 = try #require(try MediaFile(path: TestFixtures.media("rotate90.mp4")).info.primaryVideoStream)
        #expect(r90.rotation == 90 && !r90.mirrored)
        #expect(r90.displaySize == Size(width: 240, height: 320))
        let r270 = try #require(try MediaFile(path: TestFixtures.media("rotate270.mp4")).info.primaryVideoStream)
        #expect(r270.rotation == 270 && !r270.mirrored)
        let plain = try #require(try MediaFile(path: TestFixtures.media("hevc.mp4")).info.primaryVideoStream)
        #expect(plain.orientation == .identity)
    }

    @Test("10-bit HEVC reports bit depth 10")
    func tenBit() throws {
        let s = try #require(try MediaFile(path: TestFixtures.media("hevc_10bit.mp4")).info.primaryVideoStream)
        #expect(s.bitDepth == 10)
        #expect(s.pixelFormat == "yuv420p10le")
        #expect(!s.isHDR)
    }

    @Test("an mp3 with a cover reports audio plus an attached picture")
    func coverArt() throws {
        let info = try MediaFile(path: TestFixtures.media("cover.mp3")).info
        #expect(info.streams.contains { $0.kind == .audio })
        let cover = try #require(info.primaryVideoStream)
        #expect(cover.isAttachedPicture)
        #expect(info.container == "mp3")
    }

    @Test("container facts: name, duration, bit rate, streams")
    func container() throws {
        let info = try MediaFile(path: TestFixtures.media("h264_portrait.mp4")).info
        #expect(info.container.contains("mp4"))
        #expect(abs((info.duration ?? 0) - 2.0) < 0.05)
        #expect((info.bitRate ?? 0) > 0)
        #expect(info.streams.map(\.kind) == [.video, .audio])
        #expect(info.streams[1].sampleRate > 0 && info.streams[1].channels > 0)
    }

    @Test("orientation decomposes every display matrix into mirror + rotation")
    func orientationMatrices() {
        // FFmpeg's layout: [a b u; c d v; x y w], 16.16 fixed point.
        let one: Int32 = 1 << 16
        func m(_ a: Int32, _ b: Int32, _ c: Int32, _ d: Int32) -> [Int32] { [a, b, 0, c, d, 0, 0, 0, 1 << 30] }
        #expect(Orientation(displayMatrix: m(one, 0, 0, one)) == .identity)
        #expect(Orientation(displayMatrix: m(0, one, -one, 0)) == Orientation(rotation: 90))
        #expect(Orientation(displayMatrix: m(-one, 0, 0, -one)) == Orientation(rotation: 180))
        #expect(Orientation(displayMatrix: m(0, -one, one, 0)) == Orientation(rotation: 270))
        #expect(Orientation(displayMatrix: m(-one, 0, 0, one)) == Orientation(rotation: 0, mirrored: true))
        #expect(Orientation(displayMatrix: m(one, 0, 0, -one)) == Orientation(rotation: 180, mirrored: true))
    }
}
