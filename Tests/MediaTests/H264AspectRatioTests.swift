import Foundation
@testable import Media
import TestSupport
import Testing

/// The H.264 SPS reader that gives ``StreamInfoMode/header`` the VUI's sample aspect ratio without decoding.
@Suite struct H264AspectRatioTests {
    /// The payload of the first `avcC` box of an MP4 file.
    static func avcC(_ path: String) throws -> [UInt8] {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let tag = Array("avcC".utf8)
        let at = try #require((4..<(data.count - 4)).first { Array(data[$0..<($0 + 4)]) == tag })
        let size = Int(data[at - 4]) << 24 | Int(data[at - 3]) << 16 | Int(data[at - 2]) << 8 | Int(data[at - 1])
        return Array(data[(at + 4)..<(at - 4 + size)])
    }

    @Test("reads the VUI's Extended_SAR whatever the container says")
    func extendedSAR() throws {
        for name in ["pasp_over_vui.mp4", "vui_only.mp4"] {
            let sar = try #require(H264AspectRatio.fromAVCC(try Self.avcC(TestFixtures.aspect(name))))
            #expect(sar.num == 27 && sar.den == 64, "\(name)")
        }
    }

    @Test("agrees with the decoder on every H.264 fixture", arguments: ["h264_portrait.mp4", "rotate90.mp4",
                                                                       "vfr.mp4", "black_start.mp4"])
    func agreesWithDecoder(name: String) throws {
        let path = TestFixtures.media(name)
        let sar = try #require(H264AspectRatio.fromAVCC(try Self.avcC(path)))
        let frame = try #require(try VideoDecoder(file: MediaFile(path: path)).nextFrame())
        // The container's pasp and the VUI agree in these files, so the frame shows the VUI's value.
        #expect(Rational(Int(sar.num), Int(sar.den)) == frame.sampleAspectRatio)
    }

    @Test("an aspect_ratio_idc from the table; a truncated SPS is left to the decoder")
    func tableAndTruncation() throws {
        // Baseline SPS, 16x16, VUI with aspect_ratio_idc 2 (12:11): built bit by bit.
        var bits = ""
        bits += "01000010" + "00000000" + "00011110"  // profile 66, constraints, level 30
        bits += "1"        // seq_parameter_set_id 0
        bits += "1"        // log2_max_frame_num_minus4 0
        bits += "1"        // pic_order_cnt_type 0
        bits += "1"        // log2_max_pic_order_cnt_lsb_minus4 0
        bits += "010"      // max_num_ref_frames 1
        bits += "0"        // gaps_in_frame_num_value_allowed_flag
        bits += "1" + "1"  // pic_width_in_mbs_minus1 0, pic_height_in_map_units_minus1 0
        bits += "1" + "1" + "0"  // frame_mbs_only, direct_8x8_inference, no cropping
        bits += "1" + "1" + "00000010"  // vui present, aspect_ratio_info_present, idc 2
        bits += String(repeating: "0", count: (8 - bits.count % 8) % 8)
        let bytes = stride(from: 0, to: bits.count, by: 8).map { i -> UInt8 in
            let start = bits.index(bits.startIndex, offsetBy: i)
            return UInt8(bits[start..<bits.index(start, offsetBy: 8)], radix: 2)!
        }
        let sar = try #require(H264AspectRatio.fromSPS(bytes))
        #expect(sar.num == 12 && sar.den == 11)
        #expect(H264AspectRatio.fromSPS(Array(bytes.prefix(5))) == nil)
        #expect(H264AspectRatio.rbsp([0, 0, 3, 1, 0, 0, 3][...]) == [0, 0, 1, 0, 0])
    }
}
