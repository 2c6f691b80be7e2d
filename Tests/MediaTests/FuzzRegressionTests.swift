import Foundation
import Media
import TestSupport
import Testing

/// Every input the fuzzer flagged (Fixtures/fuzz/, see docs/reliability.md) goes through the fuzz target's path
/// again — open from memory, decode the first frames, convert, encode, with the limits of
/// Fuzz/Sources/VideoFeedFuzz/FuzzOne.swift, in both open modes — and must end in frames or a MediaError.
@Suite struct FuzzRegressionTests {
    static let folder = TestFixtures.folder.appendingPathComponent("fuzz")
    static let inputs: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
        .filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted()

    @Test("the flagged inputs are there") func present() { #expect(!Self.inputs.isEmpty) }

    @Test("mutated sample-table bombs are refused by the scan before the demuxer indexes them",
          arguments: inputs.filter { $0.hasPrefix("slow-index-") })
    func indexBomb(name: String) throws {
        let data = try Data(contentsOf: Self.folder.appendingPathComponent(name))
        #expect {
            _ = try MediaFile(data: data, name: name)
        } throws: { error in
            (error as? MediaError)?.kind == .limitExceeded
                && (error as? MediaError)?.message.contains("the sample tables claim") == true
        }
    }

    @Test("a flagged input gives frames or a typed error", arguments: inputs)
    func replay(name: String) throws {
        let data = try Data(contentsOf: Self.folder.appendingPathComponent(name))
        for mode in [StreamInfoMode.probe, .header] {
            var options = OpenOptions(streamInfo: mode)
            options.maxDimension = 4096
            options.maxPixelCount = 2048 * 2048
            options.maxDecodedFrames = 16
            options.maxDecodedBytes = 64 << 20
            options.itemTimeLimit = 30
            do {
                let file = try MediaFile(data: data, name: name, options: options)
                let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: 1))
                let converter = FrameConverter(pixelFormat: .rgb24, fittingIn: Size(width: 64, height: 64),
                                               orientation: decoder.stream.orientation)
                var frames = 0
                while frames < 3, let frame = try decoder.nextFrame() {
                    _ = try ImageEncoder(format: .png).encode(try converter.convert(frame))
                    frames += 1
                }
            } catch let error as MediaError {
                #expect(error.item == name)
            }
        }
    }
}
