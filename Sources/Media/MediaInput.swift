internal import CFFmpeg
import Foundation

/// Where a ``MediaFile`` reads its bytes: a URL FFmpeg opens (`avio_open2`), or bytes in memory read through our own
/// callbacks (`avio_alloc_context`). Either way the `AVIOContext` is ours: the format context only borrows it
/// (`AVFMT_FLAG_CUSTOM_IO`), and ``close()`` frees it after the format context is closed.
final class MediaInput {
    /// The I/O context handed to the format context. Valid until ``close()``.
    private(set) var io: UnsafeMutablePointer<AVIOContext>?
    /// For memory input: the bytes and the read position, reached by the callbacks through `opaque`.
    private let memory: Unmanaged<MemoryReader>?

    private init(io: UnsafeMutablePointer<AVIOContext>, memory: Unmanaged<MemoryReader>?) {
        self.io = io
        self.memory = memory
    }

    /// Opens `url` for reading with FFmpeg's protocols, limited to `whitelist`; the blocking connect honours
    /// `interrupt`. The corresponding FFmpeg function is `avio_open2`.
    static func open(url: String, whitelist: String,
                     interrupt: UnsafePointer<AVIOInterruptCB>) -> (input: MediaInput?, code: Int32) {
        var dict: OpaquePointer? = nil
        av_dict_set(&dict, "protocol_whitelist", whitelist, 0)
        defer { av_dict_free(&dict) }
        var io: UnsafeMutablePointer<AVIOContext>? = nil
        let result = avio_open2(&io, url, vf_avio_flag_read(), interrupt, &dict)
        guard result >= 0, let io else { return (nil, result < 0 ? result : vf_averror(ENOMEM)) }
        return (MediaInput(io: io, memory: nil), 0)
    }

    /// Reads from `bytes`, seekable, without touching any protocol.
    static func memory(_ bytes: Data) -> MediaInput? {
        let reader = Unmanaged.passRetained(MemoryReader(bytes))
        let size: Int32 = 32 * 1024
        guard let buffer = av_malloc(Int(size))?.assumingMemoryBound(to: UInt8.self) else {
            reader.release()
            return nil
        }
        guard let io = avio_alloc_context(buffer, size, 0, reader.toOpaque(), memoryRead, nil, memorySeek) else {
            av_free(buffer)
            reader.release()
            return nil
        }
        return MediaInput(io: io, memory: reader)
    }

    /// The error the I/O layer hit (a reset connection, a body that ended early, an interrupt), if any. Demuxers
    /// often report such a failure as "invalid data" (the box they were reading is cut short); this is the cause.
    var ioError: Int32? {
        guard let io, io.pointee.error < 0, io.pointee.error != vf_averror_eof() else { return nil }
        return io.pointee.error
    }

    /// Frees the I/O context (and, for memory input, its buffer and the bytes). Call after `avformat_close_input`.
    func close() {
        guard io != nil else { return }
        if let memory {
            // FFmpeg may have replaced the buffer it was given; free the current one.
            av_freep(&io!.pointee.buffer)
            avio_context_free(&io)
            memory.release()
        } else {
            avio_closep(&io)
        }
    }

    deinit { close() }
}

/// The bytes and position behind a memory ``MediaInput``. Touched only by FFmpeg's read and seek callbacks, on the
/// thread that uses the owning ``MediaFile``.
final class MemoryReader {
    let bytes: Data
    var position = 0

    init(_ bytes: Data) { self.bytes = bytes }
}

private let memoryRead: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = {
    opaque, buffer, size in
    guard let opaque, let buffer, size > 0 else { return vf_averror(EINVAL) }
    let reader = Unmanaged<MemoryReader>.fromOpaque(opaque).takeUnretainedValue()
    let count = min(Int(size), reader.bytes.count - reader.position)
    guard count > 0 else { return vf_averror_eof() }
    reader.bytes.withUnsafeBytes { raw in
        let start = raw.baseAddress!.advanced(by: reader.position)
        buffer.update(from: start.assumingMemoryBound(to: UInt8.self), count: count)
    }
    reader.position += count
    return Int32(count)
}

private let memorySeek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
    guard let opaque else { return Int64(vf_averror(EINVAL)) }
    let reader = Unmanaged<MemoryReader>.fromOpaque(opaque).takeUnretainedValue()
    let count = Int64(reader.bytes.count)
    if whence & vf_avseek_size() != 0 { return count }
    let base: Int64
    switch whence & ~vf_avseek_force() {
    case SEEK_SET: base = 0
    case SEEK_CUR: base = Int64(reader.position)
    case SEEK_END: base = count
    default: return Int64(vf_averror(EINVAL))
    }
    let (target, overflow) = base.addingReportingOverflow(offset)
    guard !overflow, target >= 0, target <= count else { return Int64(vf_averror(EINVAL)) }
    reader.position = Int(target)
    return target
}
