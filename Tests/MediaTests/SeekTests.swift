import Media
import TestSupport
import Testing

@Suite struct SeekTests {
    let path = TestFixtures.media("h264_portrait.mp4")

    @Test("exact seek lands on the first frame at or after the target", arguments: [0.0, 0.5, 1.0, 1.37, 1.95])
    func exact(target: Double) throws {
        let decoder = try VideoDecoder(file: MediaFile(path: path))
        try decoder.seek(to: target, mode: .exact)
        let frame = try #require(try decoder.nextFrame())
        let t = try #require(frame.time)
        #expect(t >= target - 1e-6)
        #expect(t < target + 1.0 / 30 + 1e-6)
    }

    @Test("fast seek lands on the keyframe at or before the target")
    func fast() throws {
        let decoder = try VideoDecoder(file: MediaFile(path: path))
        try decoder.seek(to: 1.5, mode: .fast)
        let frame = try #require(try decoder.nextFrame())
        #expect(frame.isKeyframe)
        #expect(try #require(frame.time) <= 1.5)
    }

    @Test("seeking back after reaching the end decodes again")
    func seekAfterEnd() throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("hevc.mp4")))
        while try decoder.nextFrame() != nil {}
        try decoder.seek(to: 0.2, mode: .exact)
        let frame = try #require(try decoder.nextFrame())
        #expect(abs(try #require(frame.time) - 0.2) < 0.001)
    }

    @Test("a negative or non-finite target is an invalid argument")
    func badTarget() throws {
        let decoder = try VideoDecoder(file: MediaFile(path: path))
        #expect { try decoder.seek(to: -1, mode: .exact) } throws: { ($0 as? MediaError)?.kind == .invalidArgument }
        #expect { try decoder.seek(to: .nan, mode: .fast) } throws: { ($0 as? MediaError)?.kind == .invalidArgument }
    }
}
