import ArgumentParser
import Feed
import Foundation
import Media

/// What `videofeed dump` writes per frame.
enum DumpFormat: String, ExpressibleByArgument, CaseIterable {
    case png, jpg, webp, ppm, raw, framemd5
    /// Decode (and convert, when asked) without writing anything, like `ffmpeg -f null -`.
    case null

    var imageFormat: ImageFormat? {
        switch self {
        case .png: .png
        case .jpg: .jpeg
        case .webp: .webp
        case .ppm: .ppm
        case .raw, .framemd5, .null: nil
        }
    }
}

/// `videofeed dump FILE`: the headless frame dump.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Decode a video and write its frames as images, raw pixels, or FFmpeg framemd5 hashes.",
        discussion: """
        Images go to DIR/frame-000001.<ext>, numbered from 1 in output order; each file is written to a temporary \
        name and renamed, so no half-written file is left. --format framemd5 prints FFmpeg's framemd5 text to stdout \
        (or writes it to --out FILE): without --size/--pix-fmt/--upright its hash column equals that of
        ffmpeg -noautorotate -i FILE -map 0:v:0 -fps_mode passthrough -f framemd5 -
        """
    )

    @Argument(help: "The video, image, or audio file with a cover picture (a path or an http(s) URL).")
    var input: String

    @Option(name: .long, help: "Output folder (created if missing); for framemd5 an output file. Default: ./frames, or stdout for framemd5.")
    var out: String?

    @Option(name: .long, help: "png, jpg, webp, ppm, raw, framemd5, or null (decode only, like ffmpeg -f null).")
    var format: DumpFormat = .png

    @Option(name: .long, help: "Start at this time in seconds (the first frame at or after it).")
    var start: Double?

    @Flag(name: .long, help: "With --start, start at the keyframe at or before it instead (faster).")
    var fastSeek = false

    @Option(name: .long, help: "Write at most N frames.")
    var frames: Int?

    @Option(name: .long, help: "Write every Nth decoded frame.")
    var every: Int = 1

    @Flag(name: .long, help: "Decode keyframes only.")
    var keyframesOnly = false

    @Option(name: .long, help: "Fit the shown picture inside WxH, keeping its aspect ratio.")
    var size: Size?

    @Option(name: .customLong("pix-fmt"), help: "Output pixel format: rgb24, rgba, bgra, gray, yuv420p. Images default to rgb24; raw and framemd5 default to the decoder's own format.")
    var pixelFormat: PixelFormat?

    @Flag(name: .long, help: "Rotate and mirror by the display matrix, as a player shows the video.")
    var upright = false

    @Option(name: .long, help: "JPEG/WebP quality, 1-100.")
    var quality: Int = 90

    @Option(name: .long, help: "Decoder threads (default: FFmpeg's automatic count, cores + 1, as the ffmpeg CLI uses).")
    var threads: Int?

    @OptionGroup var policy: MediaPolicyOptions

    func validate() throws {
        if let frames, frames < 1 { throw ValidationError("--frames must be at least 1") }
        if every < 1 { throw ValidationError("--every must be at least 1") }
        if let start { try NumberRules.mediaTime(start, "--start") }
        if !(1...100).contains(quality) { throw ValidationError("--quality must be between 1 and 100") }
        if let threads { try NumberRules.count(threads, "--threads", max: NumberRules.maxThreads) }
    }

    func run() throws {
        var request = DumpRequest(input: input, format: format)
        request.openOptions = policy.applied(to: OpenOptions())
        request.out = out
        request.start = start
        request.seekMode = fastSeek ? .fast : .exact
        request.maxFrames = frames
        request.every = every
        request.keyframesOnly = keyframesOnly
        request.box = size
        request.pixelFormat = pixelFormat
        request.upright = upright
        request.quality = quality
        request.threads = threads
        if format.imageFormat != nil || format == .raw {
            // The output folder first: one that cannot be made means the command could not run at all.
            let folder = out ?? "frames"
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                Console.error("\(Console.safe(folder)): cannot create the output folder: \(SystemErrorText.reason(error))")
                throw ExitCode(ExitStatus.couldNotRun)
            }
        }
        do {
            let written = try FrameDumper.run(request)
            if format != .framemd5 && format != .null || format == .framemd5 && out != nil {
                Console.error("\(Console.safe(input)): wrote \(written) frame\(written == 1 ? "" : "s") to \(Console.safe(request.out ?? "frames"))")
            }
        } catch {
            Console.error(Console.describe(error))
            throw ExitCode(ExitStatus.someFailed)
        }
    }
}
