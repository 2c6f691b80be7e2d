import EngineSupport
import Media
import Prefetch

/// Prepares feed items with the Media layer: open and probe, open the decoder, decode and convert frames to the
/// display format, looping at the end of the item. Each step is the configuration's ``PreparationRecipe``'s, the
/// steps `videofeed simulate calibrate` measures.
///
/// A short clip loops from frames it already holds: while an item's first pass stays within
/// ``FeedPlayerConfiguration/loopHold`` the handle keeps its converted frames, and at the first wrap asks the
/// scheduler to keep them (``PrefetchJob/holdLoop(frames:bytes:)``, charged against the budget). If it may, the
/// decoder is closed and every later loop is delivered from those frames — same pictures, times and durations, the
/// loop number counting on — instead of seeking back and decoding again; if not, they are let go and the item loops
/// by decoding, as a longer one does.
struct MediaPreparer: PrefetchPreparer {
    let catalog: ItemCatalog
    let recipe: PreparationRecipe
    /// The largest first pass kept to loop from.
    let loopHold: PrefetchRules.LoopHold
    /// What the preparer did, for the player's metrics.
    let work = Locked(Work())

    /// Counts of the preparer's own work.
    struct Work: Sendable {
        /// Items opened (container and stream information).
        var opens = 0
        /// Frames decoded and converted (delivered or decoded again unshown).
        var framesDecoded = 0
        /// Frames delivered from a held first pass, not decoded.
        var framesReplayed = 0
    }

    init(catalog: ItemCatalog, configuration: FeedPlayerConfiguration) {
        self.catalog = catalog
        self.recipe = configuration.recipe
        self.loopHold = configuration.loopHold
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
        /// The first pass's frames, in order, while it may still be held (within the bound); emptied once it is
        /// not. They share their pictures' storage with the frames delivered.
        var firstPass: [PlayerFrame] = []
        var collecting = true
        /// The held first pass later loops are delivered from (the scheduler counts its bytes), and the position of
        /// the next frame in it. The decoder is closed once it is held.
        var heldLoop: [PlayerFrame]?
        var heldPosition = 0

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
            work.withLock { $0.opens += 1 }
        }
        // Cancelling the job interrupts a blocking read through FFmpeg's interrupt callback.
        job.token.onCancel { handle.cancellation.cancel() }
        // A job that has done enough returns — but a fresh decoder for an item holding frames is positioned first
        // (below), so that it is ready to go on from the last of them.
        if existing == nil, !job.reached(.probed), handle.toSkip == 0 || job.token.isCancelled { return handle }
        if job.target == .probed { return handle }
        if handle.heldLoop != nil { return replay(job, handle: handle) }

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
            var admitted = false
            if handle.toSkip == 0, job.startsWithFirstFrame || delivered > 0, let bytes = handle.frameBytes {
                guard job.admit(bytes: bytes) == .go else { return handle }
                admitted = true
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
                // A short clip's whole first pass, kept: later loops come from it, without the decoder.
                if handle.loop == 0, handle.collecting, handle.firstPass.count == handle.decodedInLoop,
                   job.holdLoop(frames: handle.firstPass.count,
                                bytes: handle.firstPass.reduce(0) { $0 + $1.image.bytes.count }) {
                    handle.heldLoop = handle.firstPass
                    handle.firstPass = []
                    handle.loop += 1
                    handle.decoder = nil
                    handle.deinterlacer = nil
                    handle.converter = nil
                    return replay(job, handle: handle, delivered: delivered, admitted: admitted)
                }
                handle.firstPass = []
                handle.collecting = false
                if let deinterlacer { try deinterlacer.seek(to: 0, mode: .fast) } else { try decoder.seek(to: 0, mode: .fast) }
                handle.loop += 1
                handle.decodedInLoop = 0
                continue
            }
            handle.decodedInLoop += 1
            let image = try converter.convert(frame)
            work.withLock { $0.framesDecoded += 1 }
            handle.frameBytes = image.bytes.count
            // Only a still needs its picture again, and a still has one frame: keep the first picture of the first
            // pass (the first frame's own storage) and let go of it once a second frame proves this is a video, so
            // the handle never holds a frame outside the budget.
            if handle.loop == 0 { handle.lastImage = handle.decodedInLoop == 1 ? image : nil }
            let shown = PlayerFrame(index: job.index, image: image, time: frame.time ?? 0,
                                    duration: Self.duration(of: frame, in: decoder), loop: handle.loop)
            if handle.loop == 0, handle.collecting { keepForLoop(shown, in: handle) }
            if handle.toSkip > 0 {
                handle.toSkip -= 1
                continue
            }
            delivered += 1
            if !job.deliver(shown) { return handle }
        }
    }

    /// Adds a frame of the first pass to those that may be held, or lets them all go once the pass is over the
    /// bound (so the handle never keeps more than the bound outside the budget before it asks).
    private func keepForLoop(_ frame: PlayerFrame, in handle: Handle) {
        let bytes = handle.firstPass.reduce(frame.image.bytes.count) { $0 + $1.image.bytes.count }
        if handle.firstPass.count + 1 > loopHold.frames || bytes > loopHold.bytes {
            handle.firstPass = []
            handle.collecting = false
        } else {
            handle.firstPass.append(frame)
        }
    }

    /// Delivers the loops after the first from the held first pass, as the decoding loop would: frames the item holds
    /// already are passed over (`toSkip`), and every frame but the item's first asks the budget for room first
    /// (`admitted`: the first one already did, before the decoder found the end of the first pass).
    private func replay(_ job: PrefetchJob<PlayerFrame>, handle: Handle, delivered: Int = 0,
                        admitted: Bool = false) -> Handle {
        guard let held = handle.heldLoop, let bytes = held.first?.image.bytes.count else { return handle }
        var delivered = delivered
        var admitted = admitted
        while !job.token.isCancelled {
            if handle.heldPosition == held.count {
                handle.heldPosition = 0
                handle.loop += 1
            }
            if handle.toSkip > 0 {
                handle.toSkip -= 1
                handle.heldPosition += 1
                continue
            }
            if !admitted, job.startsWithFirstFrame || delivered > 0, job.admit(bytes: bytes) != .go { return handle }
            admitted = false
            var frame = held[handle.heldPosition]
            frame.loop = handle.loop
            handle.heldPosition += 1
            delivered += 1
            work.withLock { $0.framesReplayed += 1 }
            if !job.deliver(frame) { return handle }
        }
        return handle
    }
}
