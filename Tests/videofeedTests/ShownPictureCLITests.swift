import Foundation
import TestSupport
import Testing

/// `dump --upright` and `probe` agree with what thumbnails and the player show: a photo upright by its EXIF
/// Orientation, an interlaced video deinterlaced; framemd5 stays what the decoder gave.
@Suite struct ShownPictureCLITests {
    /// Width, height and RGB bytes of a binary PPM (`P6`, maxval 255) as `dump --format ppm` writes it.
    func readPPM(_ path: String) throws -> (width: Int, height: Int, rgb: [UInt8]) {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var fields: [String] = [], i = 0
        while fields.count < 4 {
            while data[i] == 0x20 || data[i] == 0x0A { i += 1 }
            let start = i
            while data[i] != 0x20 && data[i] != 0x0A { i += 1 }
            fields.append(String(decoding: data[start..<i], as: UTF8.self))
        }
        #expect(fields[0] == "P6" && fields[3] == "255")
        return (Int(fields[1])!, Int(fields[2])!, Array(data[(i + 1)...]))
    }

    @Test("dump --upright turns a photo by its EXIF Orientation", arguments: [6, 8, 5])
    func dumpUpright(n: Int) throws {
        let out = try TestFixtures.temporaryFolder("dump-exif")
        defer { try? FileManager.default.removeItem(at: out) }
        let result = try run(TestFixtures.cli, ["dump", TestFixtures.orientation(n), "--format", "ppm", "--upright",
                                                "--out", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        let ppm = try readPPM(out.appendingPathComponent("frame-000001.ppm").path)
        let upright = TestFixtures.exifUprightSize(n)
        try #require(ppm.width == upright.width && ppm.height == upright.height)
        let corners = [(4, 4), (ppm.width - 5, 4), (4, ppm.height - 5), (ppm.width - 5, ppm.height - 5)].map { x, y in
            let o = (y * ppm.width + x) * 3
            return Corner(r: ppm.rgb[o], g: ppm.rgb[o + 1], b: ppm.rgb[o + 2])
        }
        #expect(corners == TestFixtures.exifCorners(n).map { Optional($0) }, "EXIF Orientation \(n)")
    }

    @Test("probe reports a photo's EXIF orientation and the size it is shown at")
    func probePhoto() throws {
        let result = try run(TestFixtures.cli, ["probe", TestFixtures.orientation(6)])
        #expect(result.status == 0)
        #expect(result.stdout.contains("64x48"))
        #expect(result.stdout.contains("rotation 90°  shown 48x64"), "\(result.stdout)")
    }

    @Test("dump --upright deinterlaces an interlaced video; framemd5 stays raw")
    func dumpInterlaced() throws {
        let input = TestFixtures.transcode("interlaced.ts")
        let out = try TestFixtures.temporaryFolder("dump-interlaced")
        defer { try? FileManager.default.removeItem(at: out) }
        for (folder, flags) in [("shown", ["--upright"]), ("stored", [])] {
            let result = try run(TestFixtures.cli, ["dump", input, "--format", "ppm", "--frames", "3",
                                                    "--out", out.appendingPathComponent(folder).path] + flags)
            #expect(result.status == 0, "\(result.stderr)")
        }
        for n in 1...3 {
            let name = String(format: "frame-%06d.ppm", n)
            let shown = try readPPM(out.appendingPathComponent("shown/\(name)").path)
            let stored = try readPPM(out.appendingPathComponent("stored/\(name)").path)
            let shownStrength = Combing.strength(rgb: shown.rgb, width: shown.width, height: shown.height)
            let storedStrength = Combing.strength(rgb: stored.rgb, width: stored.width, height: stored.height)
            #expect(storedStrength > 0.6 && shownStrength < 0.3, "frame \(n): shown \(shownStrength), stored \(storedStrength)")
        }
        // framemd5 hashes the decoder's frames, combed as they are, as `ffmpeg -f framemd5` does.
        let plain = try run(TestFixtures.cli, ["dump", input, "--format", "framemd5", "--frames", "3"])
        let ffmpeg = try run(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
            "-v", "error", "-i", input, "-map", "0:v:0", "-frames:v", "3", "-f", "framemd5", "-"])
        func hashes(_ text: String) -> [String] {
            text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0.split(separator: ",").last!) }
        }
        #expect(hashes(plain.stdout) == hashes(ffmpeg.stdout) && hashes(plain.stdout).count == 3)
    }
}
