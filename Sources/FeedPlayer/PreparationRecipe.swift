import EngineSupport
import Media

/// How the engine prepares an item for display: how it is opened, how its decoder is opened, how its frames are
/// scaled and converted. The one recipe behind both the player (``FeedPlayer``'s preparer) and
/// `videofeed simulate calibrate`, so that a calibrated cost profile measures the engine that plays.
///
/// A player's recipe is ``FeedPlayerConfiguration/recipe``; ``player`` is the default configuration's. The steps are
/// the recipe's methods, so whoever prepares an item prepares it the same way:
/// ``open(_:cancellation:)`` → ``decoder(for:)`` → ``frames(of:)`` → ``converter(for:)``.
public struct PreparationRecipe: Sendable, Equatable {
    /// The open policy, limits and stream-info mode. The player's is ``StreamInfoMode/header`` with
    /// ``MediaFile/feedFormats`` only: reading the MP4 header instead of probing packets, with ``scaling``
    /// ``ScalingQuality/fast``, took a cold first frame from 42 to 26 ms on the reference clip.
    public var openOptions: OpenOptions
    /// The decoder's options: as many threads per item as active cores by default (``FeedPlayerConfiguration/decoderThreads``).
    public var decoderOptions: DecoderOptions
    /// How frames are scaled to ``displaySize``: ``ScalingQuality/fast`` for the player (frames are shown, not kept).
    public var scaling: ScalingQuality
    /// The box frames are fitted into, keeping aspect ratio.
    public var displaySize: Size
    /// The pixel format frames are converted to.
    public var pixelFormat: PixelFormat
    /// Whether frames are turned upright by their display matrix: the stream's, else the frame's own (a photo's
    /// EXIF Orientation).
    public var upright: Bool
    /// Whether an interlaced item's frames are deinterlaced (``Deinterlacer``).
    public var deinterlaces: Bool

    /// A recipe with every setting given.
    public init(openOptions: OpenOptions, decoderOptions: DecoderOptions, scaling: ScalingQuality, displaySize: Size,
                pixelFormat: PixelFormat, upright: Bool, deinterlaces: Bool = true) {
        self.openOptions = openOptions
        self.decoderOptions = decoderOptions
        self.scaling = scaling
        self.displaySize = displaySize
        self.pixelFormat = pixelFormat
        self.upright = upright
        self.deinterlaces = deinterlaces
    }

    /// The recipe of a default ``FeedPlayerConfiguration``: what the player does unless told otherwise.
    public static var player: PreparationRecipe { FeedPlayerConfiguration().recipe }

    /// Step 1: opens `source` (a path or URL) with ``openOptions``; the corresponding FFmpeg functions are
    /// `avformat_open_input` and, unless the header suffices, `avformat_find_stream_info`.
    ///
    /// - Throws: ``MediaError`` as ``MediaFile/init(path:options:cancellation:)`` does.
    public func open(_ source: String, cancellation: CancellationToken? = nil) throws -> MediaFile {
        try MediaFile(path: source, options: openOptions, cancellation: cancellation)
    }

    /// Step 2: opens the decoder of `file`'s video stream with ``decoderOptions`` (`avcodec_open2`).
    ///
    /// - Throws: ``MediaError`` as ``VideoDecoder/init(file:options:)`` does.
    public func decoder(for file: MediaFile) throws -> VideoDecoder {
        try VideoDecoder(file: file, options: decoderOptions)
    }

    /// Step 2b: where the frames to show come from: a ``Deinterlacer`` over `decoder` when ``deinterlaces`` is set
    /// (it deinterlaces an interlaced item with libavfilter's `bwdif` and hands any other item's frames on as they
    /// are), nil to take `decoder`'s frames as they are.
    public func frames(of decoder: VideoDecoder) -> Deinterlacer? {
        deinterlaces ? Deinterlacer(decoder: decoder) : nil
    }

    /// Step 3: a converter of `decoder`'s frames to ``pixelFormat`` in ``displaySize`` with ``scaling``, each frame
    /// turned upright by its own ``VideoFrame/orientation`` when ``upright`` is set (libswscale's
    /// `sws_getCachedContext` behind it).
    public func converter(for decoder: VideoDecoder) -> FrameConverter {
        FrameConverter(pixelFormat: pixelFormat, fittingIn: displaySize, upright: upright, scaling: scaling)
    }
}

extension FeedPlayerConfiguration {
    /// How this configuration prepares items: its open options, decoder threads, scaling, display size, pixel format,
    /// orientation and deinterlacing as one ``PreparationRecipe``.
    public var recipe: PreparationRecipe {
        PreparationRecipe(openOptions: openOptions, decoderOptions: DecoderOptions(threadCount: decoderThreads),
                          scaling: scaling, displaySize: displaySize, pixelFormat: pixelFormat, upright: upright,
                          deinterlaces: deinterlaces)
    }
}
