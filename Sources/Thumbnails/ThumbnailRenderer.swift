import EngineSupport
import Foundation
import Media

/// Opens one item once and renders its thumbnails: every asked position (or a contact sheet) from the same open
/// file, upright by the display matrix (mirroring included; the stream's, else the frame's — a photo's EXIF
/// Orientation), deinterlaced when the item is interlaced (``Deinterlacer``), fitted in the box or center-cropped to a
/// square, HDR tone mapped to SDR (see ``ToneMapping``). Still images and cover art give their one picture; an animated GIF
/// is treated as a video.
///
/// A value type; each ``render(path:cancellation:)`` call is independent, so one renderer may serve many threads.
public struct ThumbnailRenderer: Sendable {
    /// How thumbnails are chosen and sized.
    public var options: ThumbnailOptions
    /// The open policy and limits for the source: by default ``OpenOptions/untrusted(streamInfo:)`` (caps on decoded
    /// frames, bytes and time per item; playlists refused) with the stream information from the header.
    public var openOptions: OpenOptions
    /// Decoder threads per item; 1 suits a batch that runs one item per core.
    public var decoderThreads: Int

    /// A renderer with `options`.
    public init(options: ThumbnailOptions = ThumbnailOptions(),
                openOptions: OpenOptions = .untrusted(streamInfo: .header), decoderThreads: Int = 1) {
        self.options = options
        self.openOptions = openOptions
        self.decoderThreads = max(1, decoderThreads)
    }

    /// Renders the thumbnails of the item at `path` (a local path or an http(s) URL).
    /// - Throws: ``MediaError`` naming the item: `fileNotFound`, `unsupportedFormat`, `noVideoStream`,
    ///   `invalidData`, `cancelled`, `timedOut`, …
    public func render(path: String, cancellation: CancellationToken? = nil) throws -> RenderedThumbnails {
        let file = try MediaFile(path: path, options: openOptions, cancellation: cancellation)
        guard let stream = file.info.primaryVideoStream else {
            throw MediaError(.noVideoStream, operation: "thumbnail", item: file.item,
                             message: "no video stream or cover picture in \(file.info.container)")
        }
        var duration = file.info.duration ?? stream.duration
        // A position at a fraction of the item (or spread over it) needs its real length, not the header's claim
        // (a fragmented MP4 can claim 143,165 s for 2.5 s of pictures): read where the video ends.
        let needsLength = options.sheet != nil || options.positions.contains { if case .seconds = $0 { false } else { true } }
        if needsLength, !stream.isAttachedPicture, stream.frameCount != 1,
           let end = try file.videoEnd(stream: stream.index) {
            duration = end.isComplete ? end.end : max(end.end, min(duration ?? 0,
                VideoEnd.maxPlausibleSeconds(bytes: end.fileSize ?? Int.max)))
        }
        let oneFrame = stream.averageFrameRate.value.map { (duration ?? 0) <= 1.5 / $0 } ?? false
        let still = stream.isAttachedPicture || stream.frameCount == 1 || !((duration ?? 0) > 0) || oneFrame
        let tone = ToneMapping(stream: stream)
        var session = Session(file: file, stream: stream, still: still, duration: duration,
                              threads: decoderThreads, exact: options.exact)
        // A photo's orientation is in its frame (EXIF), not its stream: its one picture, decoded first, tells the
        // size it is shown at.
        let display = still ? try Self.displaySize(of: session.frame(at: 0), stream: stream) : stream.displaySize
        var result = RenderedThumbnails(images: [], times: [], duration: duration, sourceSize: display,
                                        blank: false, toneMapping: tone)
        if let sheet = options.sheet {
            let tileWidth = max(8, options.box.width / sheet.columns)
            let converter = makeConverter(display, width: tileWidth)
            var tiles: [Image] = []
            for position in sheet.positions {
                let frame = try session.frame(at: position.target(duration: duration) ?? 0)
                var tile = try finish(converter.convert(frame), side: tileWidth)
                if options.timestamps, !still, let time = frame.time {
                    tile = TimestampLabel.draw(TimestampLabel.text(time), on: tile)
                }
                tiles.append(tile)
            }
            let cell = tiles.first!.size
            result.images = [ImageOperations.sheet(tiles, columns: sheet.columns, rows: sheet.rows, cell: cell)]
            result.times = [nil]
            return result
        }
        let converter = makeConverter(display, width: options.box.width)
        for position in options.positions {
            if position == .auto && !still {
                let choice = try session.chooseAuto(converter: converter)
                result.images.append(try finish(choice.candidate.image, side: options.box.width))
                result.times.append(choice.candidate.time)
                result.blank = result.blank || choice.blank
            } else {
                let frame = try session.frame(at: position.target(duration: duration) ?? 0)
                result.images.append(try finish(converter.convert(frame), side: options.box.width))
                result.times.append(still ? nil : frame.time)
            }
        }
        return result
    }

    /// The tallest (or, for a square crop, longest) a thumbnail gets relative to its width: 4, taller than any
    /// phone screen. A picture of a more extreme shape (a valid 1x16384 PNG) is fitted into that box instead of
    /// becoming a strip of a million rows.
    static let maxAspect = 4

    /// `stream`'s displayed size (``StreamInfo/displaySize``), turned as `frame` is turned upright when its own
    /// orientation differs from the stream's (a photo's EXIF Orientation).
    static func displaySize(of frame: VideoFrame, stream: StreamInfo) -> Size {
        let size = stream.displaySize
        guard frame.orientation.swapsAxes != stream.orientation.swapsAxes else { return size }
        return Size(width: size.height, height: size.width)
    }

    /// A converter to upright `.rgb24` that fits the box, or covers the square of side `width` when square;
    /// `display` is the size the picture is shown at.
    private func makeConverter(_ display: Size, width: Int) -> FrameConverter {
        let box: Size
        let longest = width * Self.maxAspect
        if options.square, display.width > 0, display.height > 0 {
            let scale = Double(width) / Double(min(display.width, display.height))
            box = Size(width: min(longest, Int((Double(display.width) * scale).rounded(.up))),
                       height: min(longest, Int((Double(display.height) * scale).rounded(.up))))
        } else if options.box.height > 0 && options.sheet == nil {
            box = options.box
        } else if options.box.height > 0, let sheet = options.sheet {
            box = Size(width: width, height: max(8, options.box.height / sheet.rows))
        } else {
            box = Size(width: width, height: longest)
        }
        return FrameConverter(pixelFormat: .rgb24, fittingIn: box, upright: true, scaling: .thumbnail, toneMapsHDR: true)
    }

    /// Crops to the square when asked (the converter already applied orientation and scale).
    private func finish(_ image: Image, side: Int) throws -> Image {
        guard options.square else { return image }
        let cropped = ImageOperations.centerCrop(image, to: Size(width: side, height: side))
        guard cropped.width < side || cropped.height < side else { return cropped }
        // A picture of extreme shape was fitted into the clamped box, so its short side is below the square's:
        // its center square, enlarged.
        let short = min(cropped.width, cropped.height)
        return ImageOperations.resizeNearest(ImageOperations.centerCrop(cropped, to: Size(width: short, height: short)),
                                             to: Size(width: side, height: side))
    }
}
