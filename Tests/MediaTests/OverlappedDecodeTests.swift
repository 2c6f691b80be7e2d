import Foundation
import Media
import TestSupport
import Testing

/// ``VideoDecoder/forEachFrame(decodingAhead:_:)`` (decoding on a second thread, a few frames ahead of the consumer)
/// and the decoder's default thread count: what makes `videofeed dump` keep pace with the ffmpeg CLI.
@Suite struct OverlappedDecodeTests {
    @Test("framemd5 through the overlapped loop equals ffmpeg's golden", arguments: TestFixtures.mediaNames)
    func framemd5MatchesGolden(name: String) throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media(name)),
                                       options: DecoderOptions(stream: .firstVideo))
        var writer = FrameMD5Writer(decoder: decoder)
        var text = ""
        try decoder.forEachFrame(decodingAhead: 2) { frame in
            text += writer.lines(for: frame)
            return true
        }
        #expect(text == (try TestFixtures.golden(name)))
    }

    @Test("without a thread count the decoder uses FFmpeg's automatic one, cores + 1, as the ffmpeg CLI does")
    func automaticThreads() throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4")))
        #expect(decoder.options.threadCount == DecoderOptions.automaticThreads)
        // FFmpeg counts the cores it may run on (av_cpu_count, the affinity mask), as Foundation does here.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        #expect(decoder.threadCount == (cores > 1 ? min(cores + 1, 16) : 1))
        let asked = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4")),
                                     options: DecoderOptions(threadCount: 2))
        #expect(asked.threadCount == 2)
    }

    @Test("a decoding error comes after every frame decoded before it")
    func errorAfterFrames() throws {
        var options = OpenOptions()
        options.maxDecodedFrames = 5
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4"), options: options))
        var seen: [Int] = []
        let error = try #require(throws: MediaError.self) {
            try decoder.forEachFrame(decodingAhead: 3) { frame in
                seen.append(frame.sequenceNumber)
                return true
            }
        }
        #expect(error.kind == .limitExceeded)
        #expect(seen == [0, 1, 2, 3, 4])
    }

    @Test("a decoding error keeps FFmpeg's explanation, logged while the file was opened on the calling thread")
    func errorKeepsExplanation() throws {
        // A fuzzed Matroska file: its demuxer complains while the header is read, then no frame decodes. With frame
        // threads the decoder's own complaint is logged on FFmpeg's threads, so the opening's explains the error.
        let path = TestFixtures.folder.appendingPathComponent("fuzz/crash-send-eagain-7a61c2c8").path
        func failure(_ loop: (VideoDecoder) throws -> Void) throws -> MediaError {
            let decoder = try VideoDecoder(file: MediaFile(path: path), options: DecoderOptions(threadCount: 2))
            return try #require(throws: MediaError.self) { try loop(decoder) }
        }
        let plain = try failure { decoder in while try decoder.nextFrame() != nil {} }
        let overlapped = try failure { decoder in try decoder.forEachFrame { _ in true } }
        #expect(plain.message.contains("exceeds containing master element"))
        #expect(overlapped.description == plain.description)
    }

    @Test("stopping early ends the decoding thread and leaves the decoder usable")
    func stopEarly() throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4")))
        var hashes: [String] = []
        try decoder.forEachFrame { frame in
            hashes.append(frame.packedMD5())
            return hashes.count < 3
        }
        #expect(hashes.count == 3)
        // The frames decoded ahead were dropped; the decoder is the caller's again.
        try decoder.seek(to: 0, mode: .exact)
        let first = try #require(try decoder.nextFrame())
        #expect(first.packedMD5() == hashes[0])
    }

    struct Stop: Error {}

    @Test("an error thrown by the body is rethrown after the decoding thread ended")
    func bodyError() throws {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4")))
        var count = 0
        #expect(throws: Stop.self) {
            try decoder.forEachFrame(decodingAhead: 1) { _ in
                count += 1
                if count == 2 { throw Stop() }
                return true
            }
        }
        #expect(count == 2)
        #expect(try decoder.nextFrame() != nil)
    }
}
