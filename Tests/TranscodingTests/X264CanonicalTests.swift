import CFFmpeg
import Foundation
@testable import Media
import TestSupport
import Testing

/// x264 as the renditions run it makes the same bytes whatever vector code the CPU gives it: a batch on one machine
/// and a server on another write the same segment files (``VideoEncoder/x264Parameters(instructionSets:)``).
@Suite struct X264CanonicalTests {
    /// The first `count` pictures of `name`, decoded, with the decoder's picture types cleared so that x264 chooses
    /// its own, as it does for a rendition.
    static func pictures(_ name: String, count: Int) throws -> [VideoFrame] {
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.transcode(name)),
                                       options: DecoderOptions(threadCount: 1))
        var frames: [VideoFrame] = []
        while frames.count < count, let frame = try decoder.nextFrame() {
            frame.frame.pointee.pict_type = AV_PICTURE_TYPE_NONE
            frames.append(frame)
        }
        return frames
    }

    /// Every packet x264 makes from `frames` with the renditions' settings and cap, its vector code limited to
    /// `instructionSets` (nil: what x264 detects here); `canonical` false only for the control.
    static func encode(_ frames: [VideoFrame], instructionSets: String?, canonical: Bool = true) throws -> [[UInt8]] {
        let width = Int(frames[0].frame.pointee.width), height = Int(frames[0].frame.pointee.height)
        let timeBase = AVRational(num: Int32(frames[0].timeBase.numerator), den: Int32(frames[0].timeBase.denominator))
        let encoder = try VideoEncoder(width: width, height: height, timeBase: timeBase,
                                       frameRate: AVRational(num: 30, den: 1), encoding: VideoEncoding(),
                                       maxBitrate: Int(Double(width * height) * 3.3), globalHeader: true,
                                       item: "x264-canonical", x264InstructionSets: instructionSets,
                                       x264Canonical: canonical)
        var packets: [[UInt8]] = []
        func keep(_ out: [Packet]) {
            for p in out { packets.append(Array(UnsafeBufferPointer(start: p.raw.pointee.data, count: Int(p.raw.pointee.size)))) }
        }
        for frame in frames { keep(try encoder.encode(frame.frame)) }
        keep(try encoder.encode(nil))
        return packets
    }

    /// Whether this CPU runs x264's code for `instructionSets` (x264 does not check; code it cannot run would crash).
    static func runs(_ instructionSets: String) -> Bool {
        #if arch(x86_64)
        let flags = av_get_cpu_flags()
        switch instructionSets {
        case "AVX2": return flags & AV_CPU_FLAG_AVX2 != 0
        case "SSE2": return flags & AV_CPU_FLAG_SSE2 != 0
        default: return instructionSets == "0"
        }
        #else
        return instructionSets == "0"
        #endif
    }

    @Test("the same pictures make the same H.264 bytes with x264's own choice of vector code, with AVX2, SSE2 and with plain C: the parts whose result each instruction set gave its own way (the macroblock tree, the assembly-only intra shortcuts) run the same everywhere",
          arguments: ["AVX2", "SSE2", "0"])
    func sameBytesOnAnyInstructionSet(instructionSets: String) throws {
        guard Self.runs(instructionSets) else { return }
        let frames = try Self.pictures("long_gop_b.mp4", count: 90)
        #expect(frames.count == 90)
        let detected = try Self.encode(frames, instructionSets: nil)
        let other = try Self.encode(frames, instructionSets: instructionSets)
        #expect(detected.count == 90)
        #expect(detected.count == other.count)
        let differing = zip(detected, other).filter { $0.0 != $0.1 }.count
        #expect(detected == other, "\(differing) of \(detected.count) packets differ between x264's detected code and asm=\(instructionSets)")
    }

    @Test("the control: without cpu-independent, x264's own vector code and its plain C make different bytes from the same pictures, so the comparison above sees the instruction set it names")
    func instructionSetsShowWithoutIt() throws {
        let frames = try Self.pictures("long_gop_b.mp4", count: 90)
        let detected = try Self.encode(frames, instructionSets: nil, canonical: false)
        let plain = try Self.encode(frames, instructionSets: "0", canonical: false)
        #expect(detected.count == plain.count)
        #expect(detected != plain)
    }
}
