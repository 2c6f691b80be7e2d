import Media
import Prefetch

/// Prepares feed items with the Media layer: open and probe, open the decoder, decode and convert frames to the
/// display format, looping at the end of the item.
struct MediaPreparer: PrefetchPreparer {
    let sources: [String]
    let configuration: FeedPlayerConfiguration

    /// An item's open decoder between jobs. `@unchecked Sendable`: used by one prefetch job at a time —
    /// PrefetchScheduler runs at most one job per item and only stores the handle between jobs.
    final class Handle: @unchecked Sendable {
        let file: MediaFile
        let cancellation: CancellationToken
        var decoder: VideoDecoder?
        var converter: FrameConverter?
        var loop = 0
        var decodedInLoop = 0

        init(file: MediaFile, cancellation: CancellationToken) {
            self.file = file
            self.cancellation = cancellation
        }
    }

    func byteCount(of frame: PlayerFrame) -> Int { frame.image.bytes.count }
    func duration(of frame: PlayerFrame) -> Double { frame.duration }

    func prepare(_ job: PrefetchJob<PlayerFrame>, from existing: Handle?) throws -> Handle? {
        let handle: Handle
        if let existing {
            handle = existing
        } else {
            let token = CancellationToken()
            handle = Handle(file: try MediaFile(path: sources[job.index], options: configuration.openOptions,
                                                cancellation: token), cancellation: token)
        }
        // Cancelling the job interrupts a blocking read through FFmpeg's interrupt callback.
        job.token.onCancel { handle.cancellation.cancel() }
        if existing == nil, !job.reached(.probed) { return handle }
        if job.target == .probed { return handle }

        let decoder = try handle.decoder ?? VideoDecoder(
            file: handle.file, options: DecoderOptions(threadCount: configuration.decoderThreads))
        handle.decoder = decoder
        let converter = handle.converter ?? FrameConverter(
            pixelFormat: configuration.pixelFormat, fittingIn: configuration.displaySize,
            orientation: configuration.upright ? decoder.stream.orientation : .identity)
        handle.converter = converter

        while true {
            guard let frame = try decoder.nextFrame() else {
                // End of the item: loop, as a feed player does.
                guard handle.decodedInLoop > 0 else {
                    throw MediaError(.invalidData, operation: "decode", item: handle.file.item, message: "no frame")
                }
                try decoder.seek(to: 0, mode: .fast)
                handle.loop += 1
                handle.decodedInLoop = 0
                continue
            }
            handle.decodedInLoop += 1
            let image = try converter.convert(frame)
            let fallbackDuration = 1 / (decoder.stream.averageFrameRate.value ?? 30)
            let shown = PlayerFrame(index: job.index, image: image, time: frame.time ?? 0,
                                    duration: frame.duration ?? fallbackDuration, loop: handle.loop)
            if !job.deliver(shown) { return handle }
        }
    }
}
