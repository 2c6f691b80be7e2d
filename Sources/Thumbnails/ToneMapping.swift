import Foundation
import Media

/// Turns the RGB of an HDR stream (PQ or HLG transfer, BT.2020 primaries) into SDR BT.709 / sRGB for a thumbnail.
///
/// libswscale has already converted the YUV to 8-bit RGB with the stream's own matrix (so 10-bit sources, HDR or not,
/// carry no green tint); what is left is the transfer and the gamut, done here on each pixel:
/// 1. linearise: PQ (SMPTE ST 2084) to absolute light, 0…10 000 cd/m²; HLG (ARIB STD-B67) through its inverse OETF
///    and the BT.2100 OOTF (system gamma 1.2) for a 1 000 cd/m² display;
/// 2. convert BT.2020 to BT.709 primaries (the BT.2087 3×3 matrix in linear light), clipping negatives;
/// 3. tone map each channel with extended Reinhard, `x·(1 + x/w²)/(1 + x)`, where `x` is light relative to HDR
///    reference white (203 cd/m², BT.2408) and `w` the white point, 1 000 cd/m² relative to it;
/// 4. encode with the sRGB curve.
/// A simple curve: good-looking thumbnails, not a mastering-grade tone mapper.
public enum ToneMapping: String, Sendable, Hashable, Codable {
    /// SDR source: nothing to do.
    case none
    /// SMPTE ST 2084 (`smpte2084`).
    case pq
    /// ARIB STD-B67 hybrid log-gamma (`arib-std-b67`).
    case hlg

    /// The mapping a stream needs, from its transfer characteristic.
    public init(stream: StreamInfo) {
        switch stream.colorTransfer {
        case "smpte2084": self = .pq
        case "arib-std-b67": self = .hlg
        default: self = .none
        }
    }

    /// `image` (`.rgb24`) mapped to SDR; returned unchanged for ``none`` or another pixel format.
    public func apply(to image: Image) -> Image {
        guard self != .none, image.pixelFormat == .rgb24 else { return image }
        let linear = (0..<256).map { self.linearNits(Double($0) / 255) / 203 }
        let m: [Double] = [1.6605, -0.5876, -0.0728, -0.1246, 1.1329, -0.0083, -0.0182, -0.1006, 1.1187]
        let white = 1000.0 / 203
        var out = [UInt8](repeating: 0, count: image.bytes.count)
        image.bytes.withUnsafeBufferPointer { src in
            for p in stride(from: 0, to: src.count, by: 3) {
                let r = linear[Int(src[p])], g = linear[Int(src[p + 1])], b = linear[Int(src[p + 2])]
                let rgb = [m[0] * r + m[1] * g + m[2] * b, m[3] * r + m[4] * g + m[5] * b,
                           m[6] * r + m[7] * g + m[8] * b]
                for c in 0..<3 {
                    let x = max(0, rgb[c])
                    let mapped = min(1, x * (1 + x / (white * white)) / (1 + x))
                    out[p + c] = UInt8((Self.srgb(mapped) * 255).rounded())
                }
            }
        }
        return Image(width: image.width, height: image.height, pixelFormat: .rgb24, bytes: out)
    }

    /// Display light in cd/m² of a non-linear signal value 0…1.
    func linearNits(_ e: Double) -> Double {
        switch self {
        case .none:
            return pow(e, 2.4) * 100
        case .pq:
            let m1 = 2610.0 / 16384, m2 = 2523.0 / 4096 * 128
            let c1 = 3424.0 / 4096, c2 = 2413.0 / 4096 * 32, c3 = 2392.0 / 4096 * 32
            let p = pow(e, 1 / m2)
            return 10_000 * pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1)
        case .hlg:
            let a = 0.17883277, b = 1 - 4 * 0.17883277, c = 0.5 - a * log(4 * a)
            let scene = e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12
            return 1000 * pow(scene, 1.2)
        }
    }

    /// The sRGB encoding of linear light 0…1.
    static func srgb(_ x: Double) -> Double {
        x <= 0.0031308 ? 12.92 * x : 1.055 * pow(x, 1 / 2.4) - 0.055
    }
}
