import Foundation
import Media
import TestSupport
import Testing

/// `videofeed transcode`, run as the built binary: a full disk, SIGKILL mid-run, the rerun, on-demand segments.
@Suite struct TranscodeCommandTests {
    let cli = TestFixtures.cli

    /// A feed folder of copies of transcode fixtures.
    func feed(_ label: String, copies: Int = 1) throws -> (source: URL, out: URL) {
        let root = try TestFixtures.temporaryFolder(label)
        let source = root.appendingPathComponent("feed")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        let names = ["rotated_phone.mp4", "long_gop_b.mp4", "surround.mp4", "interlaced.ts"]
        for i in 0..<copies {
            for name in names {
                try FileManager.default.copyItem(atPath: TestFixtures.transcode(name),
                                                 toPath: source.appendingPathComponent("c\(i)-\(name)").path)
            }
        }
        return (source, root.appendingPathComponent("out"))
    }

    /// Every visible file below `out` is whole: each MP4 decodes to its last frame; nothing half-made is visible
    /// (staging folders and temporary files are hidden).
    func checkWhole(_ out: URL) throws -> Int {
        var checked = 0
        guard let walker = FileManager.default.enumerator(at: out, includingPropertiesForKeys: nil,
                                                          options: [.skipsHiddenFiles]) else { return 0 }
        // init.mp4 is an initialisation segment: no frames of its own.
        for case let url as URL in walker where url.pathExtension == "mp4" && url.lastPathComponent != "init.mp4" {
            let decoder = try VideoDecoder(file: MediaFile(path: url.path))
            var frames = 0
            while try decoder.nextFrame() != nil { frames += 1 }
            #expect(frames > 0 && decoder.corruptPacketCount == 0, "\(url.path)")
            checked += 1
        }
        return checked
    }

    @Test("a full disk fails the items with a clear error naming each, leaves no partial output, and the rerun completes")
    func fullDisk() throws {
        let (source, out) = try feed("transcode-full")
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        // A 96 KiB file size limit (SIGXFSZ ignored, so a write past it fails with EFBIG) stands in for a full disk.
        let limited = try run(URL(fileURLWithPath: "/bin/bash"), ["-c", """
            trap '' XFSZ; ulimit -f 96; exec "$0" transcode "$1" --out "$2" --ladder 720x1280 -q
            """, cli.path, source.path, out.path])
        #expect(limited.status == 1, "\(limited.stderr)")
        #expect(limited.stderr.contains("c0-long_gop_b") && limited.stderr.contains("File too large"), "\(limited.stderr)")
        let visible = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { !$0.hasPrefix(".") }
        #expect(visible.allSatisfy { $0.hasSuffix(".jsonl") || !$0.contains("long_gop_b") }, "\(visible)")
        let hidden = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { $0.contains(".tmp-") }
        #expect(hidden.isEmpty, "\(hidden)")
        _ = try checkWhole(out)
        let rerun = try run(cli, ["transcode", source.path, "--out", out.path, "--ladder", "720x1280", "-q"])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(try checkWhole(out) >= 8)
    }

    @Test("a batch killed with SIGKILL leaves only whole files visible; the rerun completes and clears the rest")
    func killAndRerun() throws {
        let (source, out) = try feed("transcode-kill", copies: 4)
        defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
        let process = Process()
        process.executableURL = cli
        process.arguments = ["transcode", source.path, "--out", out.path, "--jobs", "2", "-q"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Kill once some items are done but long before all are.
        let records = out.appendingPathComponent("renditions.jsonl")
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = (try? String(contentsOf: records, encoding: .utf8)) ?? ""
            if text.split(separator: "\n").count >= 2 { break }
            usleep(20_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        _ = try checkWhole(out)
        let rerun = try run(cli, ["transcode", source.path, "--out", out.path, "--jobs", "2", "--json", "-q"])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(rerun.stdout.contains("\"failed\":0") && rerun.stdout.contains("\"items\":16"), "\(rerun.stdout)")
        let leftovers = FileManager.default.enumerator(atPath: out.path)?.compactMap { $0 as? String }
            .filter { $0.contains(".tmp-") } ?? []
        #expect(leftovers.isEmpty, "\(leftovers)")
        #expect(try checkWhole(out) >= 16 * 3)
    }

    @Test("transcode segment makes one segment alone and names its timing; a segment past the end is refused with exit 2")
    func segment() throws {
        let out = try TestFixtures.temporaryFolder("transcode-segment")
        defer { try? FileManager.default.removeItem(at: out) }
        let ok = try run(cli, ["transcode", "segment", TestFixtures.transcode("long_gop_b.mp4"), "--index", "1",
                               "--out", out.path])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.hasPrefix("segment 1: start 1.000 s, duration 2.000 s, 60 frames, avc1."), "\(ok.stdout)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("seg-1.m4s").path))
        let past = try run(cli, ["transcode", "segment", TestFixtures.transcode("long_gop_b.mp4"), "--index", "4",
                                 "--out", out.path])
        #expect(past.status == 2)
        #expect(past.stderr.contains("no segment 4; this item has 4"), "\(past.stderr)")
        // A first segment as long as the others: the plain k·2 s grid.
        let plain = try run(cli, ["transcode", "segment", TestFixtures.transcode("long_gop_b.mp4"), "--index", "1",
                                  "--first-segment", "2", "--out", out.path])
        #expect(plain.stdout.hasPrefix("segment 1: start 2.000 s, duration 2.000 s, 60 frames, avc1."), "\(plain.stdout)")
    }

    @Test("--codecs h264,av1 adds an AV1 set named <box>-av1 with av01 codecs strings; a bad codec list is a usage error; simulate serve refuses AV1")
    func av1Codecs() throws {
        let out = try TestFixtures.temporaryFolder("transcode-av1")
        defer { try? FileManager.default.removeItem(at: out) }
        let segment = try run(cli, ["transcode", "segment", TestFixtures.transcode("rotated_phone.mp4"), "--index", "0",
                                    "--codecs", "h264,av1", "--rendition-index", "1", "--out", out.path])
        #expect(segment.status == 0, "\(segment.stderr)")
        #expect(segment.stdout.contains(", av01.0."), "\(segment.stdout)")
        #expect(!segment.stderr.contains("Svt[info]"), "SVT-AV1's own log reached stderr")
        for bad in ["av1", "h264,h264", "h264,vp9"] {
            let refused = try run(cli, ["transcode", "segment", TestFixtures.transcode("rotated_phone.mp4"), "--index",
                                        "0", "--codecs", bad, "--out", out.path])
            #expect(refused.status == 2 && refused.stderr.contains("--codecs"), "\(bad): \(refused.stderr)")
        }
        // serve takes the AV1 set (ServeAV1Tests); what models serving has costs for the H.264 ladder only.
        let simulated = try run(cli, ["simulate", "serve", out.path, "--codecs", "h264,av1"])
        #expect(simulated.status == 2 && simulated.stderr.contains("models the H.264 ladder only"), "\(simulated.stderr)")
    }

    @Test("transcode segment --every-rendition makes segment 0 of every rendition from one pass, each the bytes of the rendition made alone; other segments are refused")
    func everyRendition() throws {
        let out = try TestFixtures.temporaryFolder("transcode-every")
        defer { try? FileManager.default.removeItem(at: out) }
        let source = TestFixtures.media("h264_portrait.mp4")
        let all = try run(cli, ["transcode", "segment", source, "--index", "0", "--every-rendition", "--out", out.path])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.stdout.contains("3 renditions in "), "\(all.stdout)")
        for (r, name) in ["720x1280", "540x960", "360x640"].enumerated() {
            let alone = out.appendingPathComponent("alone-\(r)")
            let one = try run(cli, ["transcode", "segment", source, "--index", "0", "--rendition-index", String(r),
                                    "--out", alone.path])
            #expect(one.status == 0, "\(one.stderr)")
            for file in ["init.mp4", "seg-0.m4s"] {
                let together = try Data(contentsOf: out.appendingPathComponent("\(name)/\(file)"))
                #expect(together == (try Data(contentsOf: alone.appendingPathComponent(file))), "\(name)/\(file)")
            }
        }
        // With an AV1 set, the ladder alone, as serve's cold listing makes it.
        let withAV1 = try run(cli, ["transcode", "segment", source, "--index", "0", "--every-rendition", "--codecs",
                                    "h264,av1", "--out", out.appendingPathComponent("av1").path])
        #expect(withAV1.status == 0 && withAV1.stdout.contains("3 renditions in ") && !withAV1.stdout.contains("-av1"),
                "\(withAV1.stdout)")
        let refused = try run(cli, ["transcode", "segment", source, "--index", "1", "--every-rendition", "--out", out.path])
        #expect(refused.status == 2 && refused.stderr.contains("--every-rendition"), "\(refused.stderr)")
    }
}
