import Foundation
import TestSupport

/// Small clips the committed fixtures do not cover, made once per test with the ffmpeg CLI into a temporary folder.
enum GeneratedClip {
    /// Runs `ffmpeg -f lavfi -i <source> <arguments> <folder>/<name>` and returns the path.
    static func make(_ name: String, source: String, arguments: [String]) throws -> String {
        let folder = try TestFixtures.temporaryFolder("thumbs-clip")
        let path = folder.appendingPathComponent(name).path
        let ffmpeg = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        let result = try run(ffmpeg, ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", source]
                             + arguments + [path])
        guard result.status == 0 else { throw GenerationFailed(message: result.stderr) }
        return path
    }

    /// A mid-gray 10-bit HEVC clip, optionally tagged with an HDR transfer (`smpte2084`, `arib-std-b67`).
    static func gray10bit(transfer: String? = nil) throws -> String {
        var tags: [String] = []
        if let transfer {
            tags = ["-color_primaries", "bt2020", "-color_trc", transfer, "-colorspace", "bt2020nc"]
        }
        return try make("gray10-\(transfer ?? "sdr").mp4", source: "color=c=0x808080:size=128x96:rate=10:duration=1",
                        arguments: ["-c:v", "libx265", "-pix_fmt", "yuv420p10le", "-x265-params",
                                    "log-level=error:pools=none:frame-threads=1"] + tags)
    }

    /// A 10-bit HDR clip (`transfer`: `smpte2084` or `arib-std-b67`, BT.2020) whose luma rises from 0 on the left to
    /// 1020 on the right, 4 codes a column over 256 columns, with neutral chroma: below black to past peak white.
    /// Lossless, so each column keeps its code.
    static func ramp10bit(transfer: String) throws -> String {
        try make("ramp10-\(transfer).mp4", source: "nullsrc=size=256x32:rate=10:duration=1",
                 arguments: ["-vf", "format=yuv444p10le,geq=lum=X*4:cb=512:cr=512,format=yuv420p10le",
                             "-c:v", "libx265", "-x265-params", "lossless=1:log-level=error:pools=none:frame-threads=1",
                             "-color_primaries", "bt2020", "-color_trc", transfer, "-colorspace", "bt2020nc",
                             "-color_range", "tv"])
    }

    /// A clip that is black from start to end.
    static func allBlack() throws -> String {
        try make("black.mp4", source: "color=c=black:size=160x120:rate=10:duration=2",
                 arguments: ["-c:v", "libx264", "-pix_fmt", "yuv420p"])
    }

    struct GenerationFailed: Error {
        var message: String
    }
}

/// Mean R, G, B of an `.rgb24` image.
func meanColor(_ bytes: [UInt8]) -> (r: Double, g: Double, b: Double) {
    var sum = (0.0, 0.0, 0.0)
    for p in stride(from: 0, to: bytes.count, by: 3) {
        sum.0 += Double(bytes[p]); sum.1 += Double(bytes[p + 1]); sum.2 += Double(bytes[p + 2])
    }
    let n = Double(bytes.count / 3)
    return (sum.0 / n, sum.1 / n, sum.2 / n)
}
