import Media
import Prefetch

/// Prepares feed items with the Media layer: open and probe, open the decoder, decode and convert frames to the
/// display format, looping at the end of the item. Each step is the configuration's ``PreparationRecipe``'s, the
/// steps `videofeed simulate calibrate` measures.
struct MediaPreparer: PrefetchPreparer {
    let catalog: ItemCatalog
    let recipe: PreparationRecipe

    init(catalog: ItemCatalog, configuration: FeedPlayerConfiguration) {
        self.catalog = catalog
        self.recipe = configuration.recipe
    }

    /// An item's open decoder between jobs. `@unchecked Sendable`: used by one prefetch job at a time —
    /// PrefetchScheduler runs at most one job per item and only stores the handle between jobs.
    final class Handle: @unchecked Sendable {
        let file: MediaFile
        let cancellation: CancellationToken
        var decoder: VideoDecoder?
        /// Deinterlaces `decoder`'s frames when the recipe asks; nil takes them as decoded.
        var deinterlacer: Deinterlacer?
        var converter: FrameConverter?
        var loop = 0
        var decodedInLoop = 0
        /// The picture of a still image or cover (an item whose first pass had one frame), shown again on each loop.
        var lastImage: Image?
        /// Frames the item held when this decoder was opened, still to decode again unshown before delivering: the
        /// next frame delivered follows the last one held, even if the job that opened it stopped early.
        var toSkip: Int
        /// Bytes of a converted frame (the display box and pixel format are fixed per item), once one was converted:
        /// what the next frame asks the budget for.
        var frameBytes: Int?

        init(file: MediaFile, cancellation: CancellationToken, toSkip: Int) {
            self.file = file
            self.cancellation = cancellation
            self.toSkip = toSkip
        }
    }

    func byteCount(of frame: PlayerFrame) -> Int { frame.image.bytes.count }

    /// How long a frame is shown. A cover picture or a still image is one frame that would otherwise "loop" at the
    /// container's tick rate: it is held for the item's duration (at least one second) instead.
    static func duration(of frame: VideoFrame, in decoder: VideoDecoder) -> Double {
        let stream = decoder.stream
        let info = decoder.file.info
        let isStill = stream.isAttachedPicture || (info.duration ?? 0) < 0.1 || stream.frameCount == 1
        if isStill { return stillDuration(decoder) }
        return frame.duration ?? 1 / (stream.averageFrameRate.value ?? 30)
    }

    /// A still is held for the item's duration, at least one second.
    static func stillDuration(_ decoder: VideoDecoder) -> Double { max(decoder.file.info.duration ?? 1, 1) }
    func duration(of frame: PlayerFrame) -> Double { frame.duration }

    func prepare(_ job: PrefetchJob<PlayerFrame>, from existing: Handle?) throws -> Handle? {
        let handle: Handle
        if let existing {
            handle = existing
        } else {
            let token = CancellationToken()
            handle = Handle(file: try recipe.open(catalog.source(at: job.index), cancellation: token), cancellation: token,
                            toSkip: job.heldFrames)
        }
        // Cancelling the job interrupts a blocking read through FFmpeg's interrupt callback.
        job.token.onCancel { handle.cancellation.cancel() }
        // A job that has done enough returns — but a fresh decoder for an item holding frames is positioned first
        // (below), so that it is ready to go on from the last of them.
        if existing == nil, !job.reached(.probed), handle.toSkip == 0 || job.token.isCancelled { return handle }
        if job.target == .probed { return handle }

        let decoder: VideoDecoder
        if let existing = handle.decoder {
            decoder = existing
        } else {
            decoder = try recipe.decoder(for: handle.file)
            handle.decoder = decoder
            handle.deinterlacer = recipe.frames(of: decoder)
        }
        let deinterlacer = handle.deinterlacer
        let converter = handle.converter ?? recipe.converter(for: decoder)
        handle.converter = converter

        // A fresh decoder for an item that holds frames already decodes them again, unshown (`handle.toSkip`), so the
        // next frame delivered follows the last one held.
        var delivered = 0
        while true {
            if handle.toSkip > 0, job.token.isCancelled { return handle }
            // Backpressure: every frame after the item's first asks for room before it is decoded, so none is ever
            // decoded only to be refused (the decoder stays at the undecoded frame when there is no room).
            if handle.toSkip == 0, job.startsWithFirstFrame || delivered > 0, let bytes = handle.frameBytes,
               job.admit(bytes: bytes) != .go {
                return handle
            }
            let next: VideoFrame?
            if let deinterlacer { next = try deinterlacer.nextFrame() } else { next = try decoder.nextFrame() }
            guard let frame = next else {
                // End of the item: loop, as a feed player does. A still (an image, a cover picture, or a stream
                // that cannot seek back) shows its picture again instead of decoding it again.
                if let still = handle.lastImage, handle.decodedInLoop <= 1 || handle.loop > 0 && handle.decodedInLoop == 0 {
                    handle.loop += 1
                    if handle.toSkip > 0 {
                        handle.toSkip -= 1
                        continue
                    }
                    let again = PlayerFrame(index: job.index, image: still, time: 0,
                                            duration: Self.stillDuration(decoder), loop: handle.loop)
                    delivered += 1
                    if !job.deliver(again) { return handle }
                    continue
                }
                guard handle.decodedInLoop > 0 else {
                    throw MediaError(.invalidData, operation: "decode", item: handle.file.item, message: "no frame")
                }
                if let deinterlacer { try deinterlacer.seek(to: 0, mode: .fast) } else { try decoder.seek(to: 0, mode: .fast) }
                handle.loop += 1
                handle.decodedInLoop = 0
                continue
            }
            handle.decodedInLoop += 1
            let image = try converter.convert(frame)
            handle.frameBytes = image.bytes.count
            // Only a still needs its picture again, and a still has one frame: keep the first picture of the first
            // pass (the first frame's own storage) and let go of it once a second frame proves this is a video, so
            // the handle never holds a frame outside the budget.
            if handle.loop == 0 { handle.lastImage = handle.decodedInLoop == 1 ? image : nil }
            if handle.toSkip > 0 {
                handle.toSkip -= 1
                continue
            }
            let shown = PlayerFrame(index: job.index, image: image, time: frame.time ?? 0,
                                    duration: Self.duration(of: frame, in: decoder), loop: handle.loop)
            delivered += 1
            if !job.deliver(shown) { return handle }
        }
    }
}
