import Foundation
import Media
import Prefetch

/// How a ``FeedPlayer`` prepares and shows items.
public struct FeedPlayerConfiguration: Sendable {
    /// Frames are fitted into this box (keeping aspect ratio), e.g. a 720x1280 portrait screen.
    public var displaySize = Size(width: 720, height: 1280)
    /// The pixel format a front end draws, e.g. `.bgra`.
    public var pixelFormat: PixelFormat = .bgra
    /// Turn frames upright by the display matrix, as a player shows them: the stream's, else each frame's own (a
    /// photo's EXIF Orientation).
    public var upright = true
    /// Deinterlace an interlaced item's frames (libavfilter's `bwdif`, see ``Deinterlacer``), so that moving edges
    /// do not comb.
    public var deinterlaces = true
    /// Concurrent prefetch jobs (default: active cores).
    public var workers = ProcessInfo.processInfo.activeProcessorCount
    /// Decoder threads per item (default: active cores). The item on screen must keep up on its own however heavy
    /// it is (a 1080p HEVC Main10 clip needs most of a core on one thread), and decodes while the neighbours wait
    /// (``PrefetchRules/jobsToStart(current:queued:laneBusy:)``), so it may use every core; neighbours mostly decode
    /// one first frame each.
    public var decoderThreads = ProcessInfo.processInfo.activeProcessorCount
    /// Decoded bytes held across all items. 256 MiB keeps five 720x1280 BGRA first frames (3.7 MB each) plus about
    /// two seconds of 30 fps playback buffer for the current and next items.
    public var memoryBudget = 256 * 1024 * 1024
    /// Whether the feed wraps around (after the last item comes the first).
    public var wraps = false
    /// How short a clip must be to loop from frames already held: an item whose whole first pass is at most this
    /// many frames and bytes keeps them (charged against ``memoryBudget`` while the item stays within ±1 of the one
    /// on screen, when the budget has room) and plays every later loop from them instead of decoding it again. Nil
    /// is ``PrefetchRules/LoopHold/standard(budget:)``: 30 frames and an eighth of the budget;
    /// ``PrefetchRules/LoopHold/none`` decodes every loop.
    public var loopHold: PrefetchRules.LoopHold {
        get { loopHoldSetting ?? .standard(budget: memoryBudget) }
        set { loopHoldSetting = newValue }
    }
    private var loopHoldSetting: PrefetchRules.LoopHold?
    /// How frames are scaled to the display size: ``ScalingQuality/fast`` by default (frames are shown, not kept).
    public var scaling = ScalingQuality.fast
    /// Protocol whitelist, time limits and size limits for opening items. Feed items come from strangers, so only
    /// the demuxers of what a feed holds open them (``MediaFile/feedFormats``).
    public var openOptions: OpenOptions = {
        var options = OpenOptions(streamInfo: .header)
        options.allowedFormats = MediaFile.feedFormats
        return options
    }()

    /// The defaults described on each property.
    public init() {}
}

/// One decoded, converted frame of an item, ready to draw.
public struct PlayerFrame: Sendable {
    /// The item's index in the feed.
    public var index: Int
    /// The picture, fitted, upright, in the configured pixel format.
    public var image: Image
    /// Presentation time in seconds within the item (restarts at each loop).
    public var time: Double
    /// How long the frame is shown, in seconds.
    public var duration: Double
    /// How many times the item has looped before this frame.
    public var loop: Int
}

/// What a front end shows for the current item.
public enum CurrentFrame: Sendable {
    /// The first frame was already decoded: show it now (a hit).
    case ready(PlayerFrame)
    /// Not decoded yet: show a placeholder; `.firstFrameArrived` follows (a miss).
    case loading
    /// The item cannot be played.
    case failed(String)

    /// The frame, when ready.
    public var frame: PlayerFrame? { if case .ready(let f) = self { f } else { nil } }
}

/// What happens in a ``FeedPlayer``, in order, on a background queue.
public enum FeedPlayerEvent: Sendable {
    /// A prefetch slot changed: a job started, a stage was reached, work was cancelled, frames were evicted.
    case slot(PrefetchEvent)
    /// A move found its first frame ready; `milliseconds` from the call to the frame.
    case hit(index: Int, milliseconds: Double)
    /// A move found nothing decoded yet.
    case miss(index: Int)
    /// After a miss, the current item's first frame arrived, `milliseconds` after the move.
    case firstFrameArrived(index: Int, milliseconds: Double)
    /// Playback was due to show a frame that was not decoded yet.
    case stall(index: Int)
    /// An item failed; the others go on.
    case failed(index: Int, message: String)
    /// A page of a paged listing arrived: `count` items are loaded now; `complete` once the listing's end is known.
    case feedGrew(count: Int, complete: Bool)
    /// A page failed to load; the player keeps playing what it has and tries again later.
    case pageFailed(message: String)
}

/// What a ``FeedPlayer`` measured.
public struct FeedPlayerMetrics: Sendable, Codable, Equatable {
    /// Moves to a different item.
    public var swipes = 0
    /// Swipes whose first frame was ready at once.
    public var hits = 0
    /// Swipes that had to wait (or whose item failed).
    public var misses = 0
    /// Time to first frame over all swipes, in milliseconds.
    public var timeToFirstFrameP50: Double = 0
    public var timeToFirstFrameP95: Double = 0
    public var timeToFirstFrameP99: Double = 0
    /// Times playback had no frame when one was due, and the seconds it waited in all.
    public var stalls = 0
    public var stallSeconds = 0.0
    /// Frames decoded and kept by prefetching (those served from a held loop included).
    public var framesDecoded = 0
    /// Frames the decoders produced and converted (shown or not), and frames served from a held first pass instead
    /// (``FeedPlayerConfiguration/loopHold``).
    public var framesDecodedByDecoders = 0
    public var framesReplayed = 0
    /// Times an item was opened, and items whose first pass was held to loop from.
    public var itemOpens = 0
    public var loopsHeld = 0
    /// Frames handed to the front end (first frames on swipes, playback frames).
    public var framesShown = 0
    /// Frames decoded but never shown: `framesDecoded - framesShown`, at least 0.
    public var wastedFrames = 0
    /// Prefetch jobs cancelled (before or while running).
    public var cancellations = 0
    /// The most decoded bytes ever held at once, and the budget.
    public var peakDecodedBytes = 0
    public var memoryBudget = 0
    /// Items that failed.
    public var failures = 0
}
