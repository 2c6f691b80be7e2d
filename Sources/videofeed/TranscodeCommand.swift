import ArgumentParser
import Feed
import Foundation
import Media
import Transcode

/// `videofeed transcode`: the feed renditions of every item of a feed (`run`, the default), or one segment of one
/// item on demand (`segment`).
struct TranscodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transcode",
        abstract: "Feed renditions (fast-start MP4, CMAF segments, HLS) and card previews for every item of a feed.",
        subcommands: [TranscodeRunCommand.self, TranscodeSegmentCommand.self],
        defaultSubcommand: TranscodeRunCommand.self
    )
}

/// The rendition options `run` and `segment` share.
struct RenditionOptions: ParsableArguments {
    @Option(help: "The boxes renditions are fitted into, largest first (never upscaled).")
    var ladder: String = "720x1280,540x960,360x640"

    @Option(help: "Segment length in seconds (a keyframe at each segment's start), 0.5-60.")
    var segment: Double = 2

    @Option(name: .customLong("first-segment"), help: """
        The first segment's length in seconds, 0.5-60 (at most --segment): what a viewer landing on an item cold \
        waits for. Segment K >= 1 covers [f + (K-1)*s, f + K*s).
        """)
    var firstSegment: Double = 1

    @Option(help: "x264 constant rate factor, 0-51.")
    var crf: Double = 23

    @Option(help: "x264 preset: ultrafast ... placebo.")
    var preset: String = "veryfast"

    @Option(help: """
        Decoder threads per item (filters run one thread, x264 --x264-threads); 0 lets FFmpeg choose. Default: 0 \
        for one job at a time, else cores / jobs (at least 1). The output is the same with any.
        """)
    var threads: Int?

    @Option(name: .customLong("x264-threads"), help: """
        x264 threads per encoder. With more than one, x264's rate control (under the renditions' bitrate cap) \
        depends on thread timing and the same segment can come out in different bytes; with one, every run, batch \
        or server, makes the same bytes. 0 lets x264 choose.
        """)
    var x264Threads: Int = 1

    @Option(help: """
        The renditions' video codecs, each a rendition per ladder box: h264, or h264,av1 for an AV1 set beside \
        the H.264 ladder (SVT-AV1; named <box>-av1). serve lists the AV1 set and makes it only for the viewers \
        that play AV1, never on a cold item's listing.
        """)
    var codecs: String = "h264"

    @Option(name: .customLong("av1-crf"), help: "SVT-AV1 constant rate factor, 0-63.")
    var av1Crf: Int = AV1Encoding().crf

    @Option(name: .customLong("av1-preset"), help: "SVT-AV1 preset, 0 (slowest) ... 13 (fastest).")
    var av1Preset: Int = AV1Encoding().preset

    @Option(help: "Frame-rate cap (frames per second).")
    var maxFps: Double = 60

    @Option(help: "AAC bit rate in kb/s.")
    var audioKbps: Int = 128

    @Option(help: "Seconds a still picture lasts as a video.")
    var stillSeconds: Double = 3

    @Option(help: "Brightness -1..1 (eq).")
    var brightness: Double = 0

    @Option(help: "Contrast -10..10 (eq).")
    var contrast: Double = 1

    @Option(help: "Saturation 0..3 (eq).")
    var saturation: Double = 1

    @Flag(help: "Keep HDR as it is instead of tone-mapping it to SDR BT.709.")
    var noToneMap = false

    @Flag(help: "Do not deinterlace frames flagged interlaced.")
    var noDeinterlace = false

    func validate() throws {
        guard let boxes = Self.boxes(ladder), !boxes.isEmpty, boxes.count <= 8 else {
            throw ValidationError("--ladder takes 1-8 sizes WxH (16-8192 each side), e.g. 720x1280,360x640.")
        }
        guard segment >= 0.5, segment <= 60 else { throw ValidationError("--segment must be 0.5-60 seconds.") }
        guard firstSegment >= 0.5, firstSegment <= 60 else {
            throw ValidationError("--first-segment must be 0.5-60 seconds.")
        }
        guard crf >= 0, crf <= 51 else { throw ValidationError("--crf must be 0-51.") }
        guard VideoEncoding.presets.contains(preset) else {
            throw ValidationError("--preset takes \(VideoEncoding.presets.joined(separator: ", ")).")
        }
        guard (0...NumberRules.maxThreads).contains(x264Threads) else {
            throw ValidationError("--x264-threads must be from 0 to \(NumberRules.maxThreads).")
        }
        guard (0...NumberRules.maxThreads).contains(threads ?? 0) else {
            throw ValidationError("--threads must be from 0 to \(NumberRules.maxThreads).")
        }
        guard Self.codecs(codecs) != nil else {
            throw ValidationError("--codecs takes h264 or h264,av1 (h264 first, each once).")
        }
        guard (0...63).contains(av1Crf) else { throw ValidationError("--av1-crf must be 0-63.") }
        guard (0...13).contains(av1Preset) else { throw ValidationError("--av1-preset must be 0-13.") }
        guard maxFps >= 1, maxFps <= 240 else { throw ValidationError("--max-fps must be 1-240.") }
        guard (16...512).contains(audioKbps) else { throw ValidationError("--audio-kbps must be 16-512.") }
        guard stillSeconds >= 0.1, stillSeconds <= 60 else { throw ValidationError("--still-seconds must be 0.1-60.") }
        guard (-1...1).contains(brightness), (-10...10).contains(contrast), (0...3).contains(saturation) else {
            throw ValidationError("--brightness takes -1..1, --contrast -10..10, --saturation 0..3.")
        }
    }

    static func boxes(_ text: String) -> [Size]? {
        let sizes = text.split(separator: ",").map { Size(parsing: String($0)) }
        guard sizes.allSatisfy({ $0 != nil }) else { return nil }
        let boxes = sizes.compactMap { $0 }
        guard boxes.allSatisfy({ (16...8192).contains($0.width) && (16...8192).contains($0.height) }) else {
            return nil
        }
        return boxes
    }

    /// Throws unless the codecs are H.264 alone: what models serving (`simulate serve`, `calibrate --serve`) has
    /// costs for the H.264 ladder only, where `serve --codecs h264,av1` also makes AV1 segments for the viewers
    /// that play them.
    func requireH264Only(_ command: String) throws {
        guard Self.codecs(codecs) == [.h264] else {
            throw ValidationError("""
                \(command) models the H.264 ladder only (no costs for AV1 segments yet); leave --codecs at h264.
                """)
        }
    }

    /// The codecs of `text` (comma-separated), or nil unless they are h264 first and each at most once.
    static func codecs(_ text: String) -> [VideoCodec]? {
        let codecs = text.split(separator: ",").map { VideoCodec(rawValue: $0.trimmingCharacters(in: .whitespaces)) }
        guard codecs.first == .h264, codecs.allSatisfy({ $0 != nil }) else { return nil }
        let known = codecs.compactMap { $0 }
        return Set(known).count == known.count ? known : nil
    }

    /// The settings, with the thread default for `jobs` items at a time.
    func settings(jobs: Int = 1) -> TranscodeSettings {
        var s = TranscodeSettings()
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let threads = self.threads ?? (jobs <= 1 ? 0 : max(1, cores / jobs))
        s.ladder = Self.boxes(ladder) ?? s.ladder
        s.segmentSeconds = segment
        s.firstSegmentSeconds = firstSegment
        s.video = VideoEncoding(crf: crf, preset: preset, threads: x264Threads)
        s.codecs = Self.codecs(codecs) ?? s.codecs
        s.av1 = AV1Encoding(crf: av1Crf, preset: av1Preset)
        s.maxFrameRate = maxFps
        s.audioBitrate = audioKbps * 1000
        s.stillSeconds = stillSeconds
        s.threads = threads
        s.adjustment = PictureAdjustment(brightness: brightness, contrast: contrast, saturation: saturation)
        s.toneMapsHDR = !noToneMap
        s.deinterlaces = !noDeinterlace
        return s
    }
}

/// `videofeed transcode [SOURCE] --out DIR …`.
struct TranscodeRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Transcode every item of a feed into feed renditions (the default subcommand).",
        discussion: """
            Writes OUT/<public_id>.<version>/ per item — <box>.mp4 (fast start), <box>/init.mp4, <box>/seg-<k>.m4s and \
            <box>/index.m3u8 (CMAF + HLS), master.m3u8, preview.mp4 and preview.webp — and one JSON record per item \
            in OUT/renditions.jsonl (OUT/renditions-<i>-of-<n>.jsonl for a shard). <version> is a digest of the \
            source version and the settings, so every file is immutable. Unchanged items are skipped; items gone \
            from the feed are removed. The exit status is 1 if any item failed. The shard index defaults to \
            $JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID, the count to $SLURM_ARRAY_TASK_COUNT. With --watch the \
            command stays up and runs again whenever the source changes (a file still being written waits until it \
            is complete); SIGTERM or SIGINT finishes the items in hand and exits 0.
            """
    )

    @OptionGroup var feedSource: FeedSourceOptions
    @OptionGroup var policy: MediaPolicyOptions
    @OptionGroup var sourceSecrets: SourceSecretsOption
    @OptionGroup var rendition: RenditionOptions
    @OptionGroup var watchOptions: WatchOptions
    @OptionGroup var batch: BatchOptions

    @Option(help: "Preview clip length in seconds (0: no preview).")
    var previewSeconds: Double = 3

    @Flag(help: "Make no fast-start MP4s (segments and playlists only).")
    var noMp4 = false

    @Flag(help: "Make no segments or playlists (fast-start MP4s only).")
    var noSegments = false

    func validate() throws {
        guard previewSeconds >= 0, previewSeconds <= 60 else {
            throw ValidationError("--preview-seconds must be 0-60.")
        }
        if noMp4 && noSegments { throw ValidationError("--no-mp4 and --no-segments together leave nothing to make.") }
        try watchOptions.check(shard: try batch.resolvedShard())
    }

    func run() throws {
        var settings = rendition.settings(jobs: batch.jobs)
        settings.makesMP4 = !noMp4
        settings.makesSegments = !noSegments
        settings.preview = previewSeconds > 0 ? PreviewSettings(seconds: previewSeconds) : nil
        let shard = try batch.resolvedShard()
        let recordFile = batch.output.appendingPathComponent(RenditionFile.name(for: shard))
        let job = BatchJob(command: "transcode", allowEmptyFeed: batch.allowEmptyFeed, quiet: batch.quiet,
                           previousCount: { RenditionFile.read(recordFile).records.count },
                           pass: { page, stop in try pass(page, settings: settings, shard: shard, stop: stop) })
        try job.run(feedSource, format: batch.feedFormat?.feedFormat, options: watchOptions)
    }

    /// One batch over `page`: transcodes, reports, and returns whether an item or a listing entry failed.
    private func pass(_ page: FeedPage, settings: TranscodeSettings, shard: Shard, stop: WatchStop?) throws -> Bool {
        var configuration = TranscodeBatch.Configuration(
            output: batch.output, settings: settings, jobs: batch.jobs, timeLimit: batch.timeLimit ?? 600,
            force: batch.force, shard: shard)
        batch.configure(&configuration, page: page, policy: policy, secrets: sourceSecrets)
        return try BatchCommandSupport.pass(TranscodeBatch(feed: page.items, configuration: configuration),
                                            "transcode", words: .init(made: "transcoded", records: "records"),
                                            page: page, options: batch, stop: stop)
    }
}

/// `videofeed transcode segment FILE --index K --out DIR`: one segment of one item, made alone, as a server makes
/// it on demand.
struct TranscodeSegmentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "segment",
        abstract: "Make media segment K of one rendition of one file alone (what a server does on demand).",
        discussion: """
            Writes DIR/init.mp4 and DIR/seg-<K>.m4s and prints the segment's start, duration, frames, codec string \
            and milliseconds taken. Segment 0 covers [0, f) of the source and segment K >= 1 [f + (K-1)*s, f + K*s) \
            (f the first segment's length, s the others'), so it fits beside segments made by `transcode run` with \
            the same settings.
            """
    )

    @Argument(help: "A media file or URL.")
    var file: String

    @OptionGroup var policy: MediaPolicyOptions
    @OptionGroup var rendition: RenditionOptions

    @Option(help: "Segment number, from 0.")
    var index: Int = 0

    @Option(help: "Rendition number in the ladder (after small-source deduplication), from 0.")
    var renditionIndex: Int = 0

    @Option(help: "Output folder.")
    var out: String

    @Flag(help: """
        With --index 0: segment 0 of every rendition of the H.264 ladder from one pass, as serve's listing of a cold \
        item makes them, into DIR/<rendition>/.
        """)
    var everyRendition = false

    func validate() throws {
        if everyRendition, index != 0 { throw ValidationError("--every-rendition takes --index 0 only.") }
    }

    func run() throws {
        let started = DispatchTime.now()
        var made: [(name: String, segment: TranscodedSegment)] = []
        do {
            // The batch's policy for strangers' uploads: what a server does on demand is done to untrusted input.
            let options = policy.applied(to: TranscodeBatch.defaultOpenOptions)
            let transcoder = try Transcoder(file: MediaFile(path: file, options: options), settings: rendition.settings())
            let folder = URL(fileURLWithPath: out)
            if everyRendition {
                // Segment 0 of the ladder's renditions from one pass (``Transcoder/segments(_:renditions:origin:)``), as
                // serve's manifest makes them (an AV1 set is made on demand there), each in its folder.
                let ladder = transcoder.plan.renditions(of: .h264)
                let segments = try transcoder.segments(0, renditions: ladder)
                made = zip(ladder.map { transcoder.plan.renditions[$0].name }, segments).map { ($0, $1) }
                for (name, segment) in made { try Self.write(segment, into: folder.appendingPathComponent(name)) }
            } else {
                let segment = try transcoder.segments(index, renditions: [renditionIndex])[0]
                made = [("", segment)]
                try Self.write(segment, into: folder)
            }
        } catch {
            Console.error("transcode segment: \(Console.describe(error))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        let ms = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6
        if everyRendition {
            for (name, segment) in made {
                Console.out(String(format: "%@ segment 0: start %.3f s, duration %.3f s, %d frames, %@, %d bytes\n", name,
                                   segment.start, segment.duration, segment.frames, segment.codecs, segment.media.count))
            }
            Console.out(String(format: "%d renditions in %.1f ms\n", made.count, ms))
        } else if let segment = made.first?.segment {
            Console.out(String(format: "segment %d: start %.3f s, duration %.3f s, %d frames, %@, %d bytes, %.1f ms\n",
                               segment.index, segment.start, segment.duration, segment.frames, segment.codecs,
                               segment.media.count, ms))
        }
    }

    /// `init.mp4` and `seg-<k>.m4s` of `segment` into `folder`, a rendition's folder (their names: ``ItemFile``),
    /// each whole or not at all.
    private static func write(_ segment: TranscodedSegment, into folder: URL) throws {
        let rendition = folder.lastPathComponent
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try AtomicFile.write(segment.initialization,
                             to: folder.appendingPathComponent(ItemFile.initialization(rendition: rendition).name).path)
        try AtomicFile.write(segment.media, to: folder.appendingPathComponent(
            ItemFile.segment(rendition: rendition, index: segment.index).name).path)
    }
}
