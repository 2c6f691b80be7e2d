import Foundation
import Media
import TestSupport
import Testing

/// Our decoder's output, hashed, equals FFmpeg's own framemd5 of every fixture, line for line.
@Suite struct DecodeConformanceTests {
    @Test("framemd5 of decoded frames equals ffmpeg's golden", arguments: TestFixtures.mediaNames)
    func framemd5MatchesGolden(name: String) throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media(name)),
                                       options: DecoderOptions(stream: .firstVideo))
        var writer = FrameMD5Writer(decoder: decoder)
        var text = ""
        while let frame = try decoder.nextFrame() { text += writer.lines(for: frame) }
        let golden = try TestFixtures.golden(name)
        #expect(text == golden)
        #expect(decoder.corruptPacketCount == 0)
    }

    @Test("the fixture list is complete")
    func fixturesPresent() {
        #expect(TestFixtures.mediaNames.count >= 15)
    }

    @Test("frames come in presentation order with times and a leading keyframe")
    func framesInOrder() throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4")))
        var times: [Double] = []
        var first: VideoFrame?
        while let frame = try decoder.nextFrame() {
            if first == nil { first = frame }
            times.append(try #require(frame.time))
        }
        #expect(times.count == 60)
        #expect(times == times.sorted())
        #expect(first?.isKeyframe == true)
        #expect(abs(times[1] - 1.0 / 30) < 1e-6)
    }

    @Test("keyframes-only decoding gives only keyframes, far fewer than all frames")
    func keyframesOnly() throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("black_start.mp4")),
                                       options: DecoderOptions(keyframesOnly: true))
        var count = 0
        while let frame = try decoder.nextFrame() {
            #expect(frame.isKeyframe)
            count += 1
        }
        #expect(count >= 1 && count < 75)
    }

    @Test("thread count is configurable and does not change the output")
    func threadCountDoesNotChangeOutput() throws {
        func hashes(threads: Int) throws -> [String] {
            let d = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4")),
                                     options: DecoderOptions(threadCount: threads))
            var out: [String] = []
            while let f = try d.nextFrame() { out.append(f.packedMD5()) }
            return out
        }
        #expect(try hashes(threads: 1) == hashes(threads: 4))
        #expect(try hashes(threads: 1) == hashes(threads: DecoderOptions.automaticThreads))
        #expect(DecoderOptions().threadCount == DecoderOptions.automaticThreads)
    }
}
