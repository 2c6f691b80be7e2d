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

    @Test("keyframe(at:) gives the keyframe at or before the target, the same picture a fast seek decodes first",
          arguments: ["h264_portrait.mp4", "hevc.mp4", "vp9.webm", "rotate90.mp4", "black_start.mp4"])
    func keyframe(name: String) throws {
        let file = TestFixtures.media(name)
        let alone = try VideoDecoder(file: MediaFile(path: file), options: DecoderOptions(threadCount: 1))
        let reference = try VideoDecoder(file: MediaFile(path: file), options: DecoderOptions(threadCount: 1))
        let duration = try #require(alone.file.info.duration)
        // The first frame may start after 0 (vp9.webm's at 7 ms): nothing is "at or before" an earlier target.
        let start = try #require(try reference.nextFrame()?.time)
        for target in [duration * 0.75, 0, duration * 0.5] {
            let frame = try #require(try alone.keyframe(at: target))
            #expect(frame.isKeyframe)
            #expect(try #require(frame.time) <= max(target, start) + 1e-6)
            // Drained: nothing more until the next seek.
            #expect(try alone.nextFrame() == nil)
            try reference.seek(to: target, mode: .fast)
            let expected = try #require(try reference.nextFrame())
            #expect(frame.time == expected.time, "\(name) at \(target)")
            #expect(frame.packedMD5() == expected.packedMD5(), "\(name) at \(target)")
        }
        // A seek after keyframe(at:) decodes normally again.
        try alone.seek(to: 0, mode: .exact)
        #expect(try alone.nextFrame()?.time == start)
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
