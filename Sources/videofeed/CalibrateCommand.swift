import ArgumentParser
import Dispatch
import EngineSupport
import Feed
import FeedPlayer
import Foundation
import Media
import PolicyLab

/// `videofeed simulate calibrate FILES... --out profile.json`: measures the Media layer on this machine, step by step
/// as FeedPlayer's preparer runs it — the same ``PreparationRecipe`` (``PreparationRecipe/player`` with the given
/// display size and pixel format), so the profile costs what the player costs — and writes a PolicyLab cost profile.
struct CalibrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calibrate",
        abstract: "Measure open, decoder open, first-frame and per-frame costs on real files into a cost profile.",
        discussion: """
        For each file, each run takes FeedPlayer's own preparation steps with FeedPlayer's default settings (its \
        PreparationRecipe: the header-only open of the feed formats, a one-thread decoder, fast scaling), with \
        the display size and format given here: it opens the file, opens the decoder and a converter, decodes and \
        converts the first frame, then --frames more. The profile holds each step's median over --runs runs, the \
        bytes of a converted frame, the frame rate, the duration and the file size; its source names the settings \
        measured. Run it on a quiet machine.

        With --serve FOLDER it measures `videofeed serve` instead: for every item serve lists in FOLDER, the \
        server's own jobs (a cold manifest, the poster, segment 0 and up to 3 later segments of the rendition a \
        540x960 viewer plays), one at a time on a temporary cache, each the best of --repeat runs on a fresh cache \
        for that artifact: wall seconds and CPU-seconds (getrusage, every thread). It writes a serve cost profile \
        (PolicyLab's ServeCosts), with serve's rendition settings as given here.
        """
    )

    @Argument(help: "Media files to measure; the profile's items follow their order (item i of a feed costs file i mod count). A file that cannot be measured is reported and left out.")
    var files: [String] = []

    @Option(help: "Measure `videofeed serve`'s jobs for every item it lists in this folder (instead of FILES).")
    var serve: String?

    @Option(name: .customLong("repeat"), help: "With --serve: runs per artifact, each on a fresh cache; the least is kept.")
    var repeats: Int = 2

    @OptionGroup(title: "Serve settings (with --serve)") var rendition: RenditionOptions
    @OptionGroup var mediaPolicy: MediaPolicyOptions

    @Option(help: "Where to write the profile JSON.")
    var out: String

    @Option(help: "Display box WxH the frames are fitted into, as FeedPlayer's displaySize.")
    var size: Size = Size(width: 720, height: 1280)

    @Option(name: .customLong("pix-fmt"), help: "Display pixel format, as FeedPlayer's pixelFormat.")
    var pixelFormat: PixelFormat = .bgra

    @Option(help: "Frames decoded after the first in each run, for the per-frame cost.")
    var frames: Int = 60

    @Option(help: "Runs per file; each step's median is kept.")
    var runs: Int = 5

    func validate() throws {
        if serve != nil, !files.isEmpty { throw ValidationError("give media files or --serve FOLDER, not both") }
        if serve == nil, files.isEmpty { throw ValidationError("give at least one media file, or --serve FOLDER") }
        if serve != nil { try rendition.requireH264Only("calibrate --serve") }
        try NumberRules.count(repeats, "--repeat", max: 100)
        try NumberRules.count(frames, "--frames", max: 100_000)
        try NumberRules.count(runs, "--runs", max: 1000)
    }

    func run() throws {
        if let serve {
            try ServeCalibration(folder: serve, out: out, repeats: repeats, rendition: rendition,
                                 mediaPolicy: mediaPolicy).run()
            return
        }
        // A file that cannot be measured is reported and left out; the others go on. The profile is written from
        // those measured (none: nothing is written), and the exit status says that something failed.
        var items: [ItemCosts] = []
        var measured: String?
        var failed = 0
        for path in files {
            do {
                let (costs, settings) = try measure(path)
                items.append(costs)
                measured = measured ?? settings
            } catch {
                Console.error("\(Console.safe(Redaction.redacted(path))): calibrate failed: \(Console.describe(error))")
                failed += 1
            }
        }
        guard !items.isEmpty, let measured else { throw ExitCode(1) }
        let profile = CostProfile(
            source: "videofeed simulate calibrate on \(ProcessInfo.processInfo.hostName), "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(runs) runs, median; \(measured)",
            display: "\(size.width)x\(size.height) \(pixelFormat)", items: items)
        do {
            try profile.json().write(to: URL(fileURLWithPath: out), options: .atomic)
        } catch {
            Console.error("\(Console.safe(out)): cannot write the profile: \(SystemErrorText.reason(error))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        for item in items {
            Console.out(String(format: "%@: open %.2f ms, decoder %.2f ms, first frame %.2f ms, frame %.2f ms, %d bytes/frame, %.2f fps\n",
                               Console.safe(item.name), item.openSeconds * 1000, item.decoderOpenSeconds * 1000,
                               item.firstFrameSeconds * 1000, item.frameSeconds * 1000, item.bytesPerFrame,
                               item.frameRate))
        }
        Console.out("\(measured)\nwrote \(Console.safe(out))\n")
        if failed > 0 {
            Console.error("\(failed) of \(files.count) files could not be measured and are not in the profile")
            throw ExitCode(1)
        }
    }

    private static func clock() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// The recipe measured: the player's, fitted into `--size` in `--pix-fmt`.
    var recipe: PreparationRecipe {
        var recipe = PreparationRecipe.player
        recipe.displaySize = size
        recipe.pixelFormat = pixelFormat
        return recipe
    }

    /// The settings of the file, decoder and converter measured, in words, as the profile records them.
    static func settings(of file: MediaFile, _ decoder: VideoDecoder, _ converter: FrameConverter) -> String {
        "FeedPlayer's recipe: stream info \(file.options.streamInfo), \(converter.scaling.rawValue) scaling, "
            + "\(decoder.options.threadCount)-thread decoder"
    }

    /// Median of each step over the runs, and the settings measured.
    private func measure(_ path: String) throws -> (ItemCosts, settings: String) {
        let recipe = self.recipe
        var open: [Double] = [], decoderOpen: [Double] = [], first: [Double] = [], perFrame: [Double] = []
        var bytes = 0, rate = 30.0, duration: Double?, settings = ""
        for _ in 0..<runs {
            var t = Self.clock()
            let file = try recipe.open(path)
            open.append(Self.clock() - t)
            t = Self.clock()
            let decoder = try recipe.decoder(for: file)
            // The frames the player shows: deinterlaced (bwdif) for an interlaced item, as decoded otherwise.
            let shown = recipe.frames(of: decoder)
            func nextFrame() throws -> VideoFrame? { try shown.map { try $0.nextFrame() } ?? decoder.nextFrame() }
            let converter = recipe.converter(for: decoder)
            decoderOpen.append(Self.clock() - t)
            settings = Self.settings(of: file, decoder, converter)
            t = Self.clock()
            guard let frame = try nextFrame() else {
                throw MediaError(.invalidData, operation: "decode", item: file.item, message: "no frame")
            }
            let image = try converter.convert(frame)
            first.append(Self.clock() - t)
            bytes = image.bytes.count
            rate = decoder.stream.averageFrameRate.value ?? frame.duration.map { 1 / $0 } ?? 30
            duration = file.info.duration
            t = Self.clock()
            var decoded = 0
            while decoded < frames, let next = try nextFrame() {
                _ = try converter.convert(next)
                decoded += 1
            }
            if decoded > 0 { perFrame.append((Self.clock() - t) / Double(decoded)) }
        }
        func median(_ v: [Double]) -> Double {
            let s = v.sorted()
            return s.isEmpty ? 0 : s[s.count / 2]
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        let costs = ItemCosts(name: (Redaction.redacted(path) as NSString).lastPathComponent, openSeconds: median(open),
                         decoderOpenSeconds: median(decoderOpen), firstFrameSeconds: median(first),
                         frameSeconds: perFrame.isEmpty ? median(first) : median(perFrame), bytesPerFrame: bytes,
                         frameRate: rate, duration: duration, sizeBytes: size)
        return (costs, settings)
    }
}
