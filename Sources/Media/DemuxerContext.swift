internal import CFFmpeg

/// An owned demuxer: the `AVFormatContext`, the ``MediaInput`` it reads through and the retain on the
/// ``InterruptState`` its interrupt callback reaches through an opaque pointer. `deinit` frees them in that order —
/// the format context first (`avformat_free_context` before it is opened, `avformat_close_input` after), then the
/// input, then the retain — so an error path in ``MediaFile``'s initializer is just a `throw`. Never leaves the
/// Media module; used on one thread at a time, like its ``MediaFile``.
final class DemuxerContext {
    /// The format context; nil once a failed `avformat_open_input` has freed it.
    private var context: UnsafeMutablePointer<AVFormatContext>?
    /// Whether `avformat_open_input` succeeded, so that `avformat_close_input` is the matching free.
    private var opened = false
    /// The I/O context the format context reads through; closed after it.
    private(set) var input: MediaInput?
    private let interruptBox: Unmanaged<InterruptState>

    /// A new format context whose interrupt callback asks `interrupt`, or nil when memory ran out. The
    /// corresponding FFmpeg function is `avformat_alloc_context`.
    init?(interrupt: InterruptState) {
        guard let ctx = avformat_alloc_context() else { return nil }
        context = ctx
        interruptBox = Unmanaged.passRetained(interrupt)
        vf_set_interrupt_callback(ctx, mediaInterruptCallback, interruptBox.toOpaque())
    }

    deinit {
        if opened {
            avformat_close_input(&context)
        } else if let context {
            avformat_free_context(context)
        }
        input?.close()
        interruptBox.release()
    }

    /// The format context. Valid for as long as this owner lives and ``open(url:format:options:)`` has not failed.
    var raw: UnsafeMutablePointer<AVFormatContext> {
        guard let context else { preconditionFailure("the format context was freed by a failed open") }
        return context
    }

    /// A copy of the context's interrupt callback, for I/O opened before the demuxer (`avio_open2`).
    var interruptCallback: AVIOInterruptCB { raw.pointee.interrupt_callback }

    /// Takes ownership of `input`, the I/O ``open(url:format:options:)`` will read through; closed after the context.
    func attach(_ input: MediaInput) {
        self.input = input
    }

    /// Opens the demuxer on the attached input, which becomes the context's `pb`: the context only borrows it
    /// (`AVFMT_FLAG_CUSTOM_IO`). On failure FFmpeg frees the format context (the input stays ours). The
    /// corresponding FFmpeg function is `avformat_open_input`.
    func open(url: String, format: UnsafePointer<AVInputFormat>?, options: inout OpaquePointer?) -> Int32 {
        raw.pointee.pb = input?.io
        let result = avformat_open_input(&context, url, format, &options)
        opened = result >= 0 && context != nil
        return result
    }
}

/// FFmpeg's interrupt callback: `opaque` is an `InterruptState` retained by its ``DemuxerContext``.
private let mediaInterruptCallback: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { opaque in
    guard let opaque else { return 0 }
    return Unmanaged<InterruptState>.fromOpaque(opaque).takeUnretainedValue().shouldInterrupt() ? 1 : 0
}
