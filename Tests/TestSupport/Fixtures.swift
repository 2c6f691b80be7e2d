import Foundation

/// Paths of the committed fixtures (Fixtures/ at the repository root) and the built CLI.
public enum TestFixtures {
    /// The repository root, found from this source file's location.
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static let folder = root.appendingPathComponent("Fixtures")

    /// `Fixtures/media/<name>`.
    public static func media(_ name: String) -> String { folder.appendingPathComponent("media/\(name)").path }

    /// `Fixtures/bad/<name>`.
    public static func bad(_ name: String) -> String { folder.appendingPathComponent("bad/\(name)").path }

    /// `Fixtures/golden/<name>.framemd5`, the output of
    /// `ffmpeg -noautorotate -i F -map 0:v:0 -fps_mode passthrough -f framemd5 -`.
    public static func golden(_ name: String) throws -> String {
        try String(contentsOf: folder.appendingPathComponent("golden/\(name).framemd5"), encoding: .utf8)
    }

    /// One row of Fixtures/expected.tsv (what ffprobe reported when the fixtures were generated).
    public struct Expected: Sendable, CustomStringConvertible {
        public var file: String
        public var codec: String
        public var width: Int
        public var height: Int
        public var pixelFormat: String
        public var bitDepth: Int
        public var rotation: Int
        public var duration: Double?
        public var frames: Int
        public var attachedPicture: Bool
        public var averageFrameRate: String
        public var description: String { file }
    }

    /// All playable fixtures with what ffprobe says of them.
    public static let expected: [Expected] = {
        guard let text = try? String(contentsOf: folder.appendingPathComponent("expected.tsv"), encoding: .utf8) else {
            return []
        }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard c.count >= 11 else { return nil }
            return Expected(file: c[0], codec: c[1], width: Int(c[2]) ?? 0, height: Int(c[3]) ?? 0,
                            pixelFormat: c[4], bitDepth: Int(c[5]) ?? 0, rotation: Int(c[6]) ?? 0,
                            duration: Double(c[7]), frames: Int(c[8]) ?? 0, attachedPicture: c[9] == "1",
                            averageFrameRate: c[10])
        }
    }()

    /// Names of all playable fixtures.
    public static var mediaNames: [String] { expected.map(\.file) }

    /// The `videofeed` executable built next to the test bundle.
    public static var cli: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("videofeed")
    }

    /// A fresh empty temporary folder.
    public static func temporaryFolder(_ label: String = "vfe") throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

extension TestFixtures {
    /// A file of `Fixtures/transcode/` (made by its generate.sh).
    public static func transcode(_ name: String) -> String {
        folder.appendingPathComponent("transcode/\(name)").path
    }
}

extension TestFixtures {
    /// A file of `Fixtures/aspect/` (made by its generate.sh): container and bitstream sample aspect ratios that
    /// disagree.
    public static func aspect(_ name: String) -> String {
        folder.appendingPathComponent("aspect/\(name)").path
    }
}

extension TestFixtures {
    /// A file of `Fixtures/duration/` (made by its generate.sh): containers that claim another duration than their
    /// pictures have.
    public static func duration(_ name: String) -> String {
        folder.appendingPathComponent("duration/\(name)").path
    }
}
