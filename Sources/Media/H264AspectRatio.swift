/// The sample aspect ratio an H.264 sequence parameter set's VUI declares, read from an MP4 `avcC` record without
/// decoding: what FFmpeg's H.264 decoder would report, for ``StreamInfoMode/header`` where no picture is decoded.
///
/// Follows the SPS syntax of ITU-T H.264 §7.3.2.1.1 and FFmpeg's `ff_h264_decode_seq_parameter_set` as far as
/// `aspect_ratio_idc`; everything after it is left unread.
enum H264AspectRatio {
    /// `aspect_ratio_idc` 0…16 (H.264 Table E-1, FFmpeg's `ff_h264_pixel_aspect`); 255 is `Extended_SAR`.
    private static let table: [(Int32, Int32)] = [
        (0, 1), (1, 1), (12, 11), (10, 11), (16, 11), (40, 33), (24, 11), (20, 11), (32, 11), (80, 33),
        (18, 11), (15, 11), (64, 33), (160, 99), (4, 3), (3, 2), (2, 1),
    ]

    /// The VUI's sample aspect ratio of the first SPS in `avcC` as (num, den): (0, 1) when the VUI declares none;
    /// nil when the record cannot be read here (not an `avcC`, no SPS, a truncated or invalid SPS), so the
    /// caller must decode to learn it.
    static func fromAVCC(_ avcC: [UInt8]) -> (num: Int32, den: Int32)? {
        // configurationVersion, profile, compatibility, level, lengthSizeMinusOne, numOfSequenceParameterSets.
        guard avcC.count > 8, avcC[0] == 1, avcC[5] & 0x1F >= 1 else { return nil }
        let length = Int(avcC[6]) << 8 | Int(avcC[7])
        guard length >= 4, 8 + length <= avcC.count, avcC[8] & 0x1F == 7 else { return nil }
        return fromSPS(rbsp(avcC[9..<(8 + length)]))
    }

    /// The NAL payload with its emulation-prevention bytes (`00 00 03`) removed.
    static func rbsp(_ nal: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(nal.count)
        var zeros = 0
        for byte in nal {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
            out.append(byte)
        }
        return out
    }

    /// Reads an SPS payload (after the NAL header byte) as far as the VUI's aspect ratio.
    static func fromSPS(_ sps: [UInt8]) -> (num: Int32, den: Int32)? {
        var bits = BitReader(sps)
        guard let profile = bits.read(8), bits.read(16) != nil, let id = bits.ue(), id <= 31 else { return nil }
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
            guard let chroma = bits.ue(), chroma <= 3 else { return nil }
            if chroma == 3, bits.read(1) == nil { return nil }
            // bit_depth_luma_minus8, bit_depth_chroma_minus8, qpprime_y_zero_transform_bypass_flag.
            guard bits.ue() != nil, bits.ue() != nil, bits.read(1) != nil, let matrices = bits.read(1) else {
                return nil
            }
            if matrices == 1 {
                for list in 0..<(chroma == 3 ? 12 : 8) {
                    guard let present = bits.read(1) else { return nil }
                    if present == 1, !skipScalingList(&bits, size: list < 6 ? 16 : 64) { return nil }
                }
            }
        }
        guard bits.ue() != nil, let pocType = bits.ue() else { return nil }  // log2_max_frame_num_minus4
        switch pocType {
        case 0:
            guard bits.ue() != nil else { return nil }
        case 1:
            guard bits.read(1) != nil, bits.se() != nil, bits.se() != nil, let cycle = bits.ue(), cycle <= 255 else {
                return nil
            }
            for _ in 0..<cycle {
                guard bits.se() != nil else { return nil }  // offset_for_ref_frame
            }
        case 2:
            break
        default:
            return nil
        }
        // max_num_ref_frames, gaps_in_frame_num_value_allowed_flag, pic_width_in_mbs_minus1,
        // pic_height_in_map_units_minus1, frame_mbs_only_flag.
        guard bits.ue() != nil, bits.read(1) != nil, bits.ue() != nil, bits.ue() != nil,
              let frameMBsOnly = bits.read(1) else { return nil }
        if frameMBsOnly == 0, bits.read(1) == nil { return nil }  // mb_adaptive_frame_field_flag
        guard bits.read(1) != nil, let cropping = bits.read(1) else { return nil }  // direct_8x8_inference_flag
        if cropping == 1 {
            for _ in 0..<4 {
                guard bits.ue() != nil else { return nil }  // frame_crop_{left,right,top,bottom}_offset
            }
        }
        guard let vui = bits.read(1) else { return nil }
        guard vui == 1 else { return (0, 1) }
        guard let present = bits.read(1) else { return nil }
        guard present == 1 else { return (0, 1) }
        guard let idc = bits.read(8) else { return nil }
        if idc == 255 {
            guard let num = bits.read(16), let den = bits.read(16) else { return nil }
            return (Int32(num), Int32(den))
        }
        // FFmpeg rejects the SPS over an illegal aspect_ratio_idc: leave that to the decoder.
        return idc < table.count ? table[Int(idc)] : nil
    }

    private static func skipScalingList(_ bits: inout BitReader, size: Int) -> Bool {
        var last = 8, next = 8
        for _ in 0..<size {
            if next != 0 {
                guard let delta = bits.se() else { return false }
                next = (last + delta + 256) % 256
            }
            last = next == 0 ? last : next
        }
        return true
    }
}

/// Reads bits most significant first, with H.264's Exp-Golomb codes; every read returns nil past the end.
struct BitReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The next `count` (≤ 32) bits as an unsigned number.
    mutating func read(_ count: Int) -> UInt32? {
        guard position + count <= bytes.count * 8 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<count {
            let bit = (bytes[position >> 3] >> (7 - UInt8(position & 7))) & 1
            value = value << 1 | UInt32(bit)
            position += 1
        }
        return value
    }

    /// An unsigned Exp-Golomb code, `ue(v)`; nil past the end or over 31 leading zeros.
    mutating func ue() -> Int? {
        var zeros = 0
        while true {
            guard let bit = read(1) else { return nil }
            if bit == 1 { break }
            zeros += 1
            if zeros > 31 { return nil }
        }
        guard let rest = read(zeros) else { return nil }
        return (1 << zeros) - 1 + Int(rest)
    }

    /// A signed Exp-Golomb code, `se(v)`.
    mutating func se() -> Int? {
        guard let k = ue() else { return nil }
        return k & 1 == 1 ? (k + 1) / 2 : -(k / 2)
    }
}
