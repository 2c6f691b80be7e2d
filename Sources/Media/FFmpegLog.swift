internal import CFFmpeg
import Foundation

/// Routes FFmpeg's log (`av_log`) away from the terminal and keeps the last error-level message of each thread, so
/// that a ``MediaError`` can carry FFmpeg's own explanation ("moov atom not found") next to `av_strerror`'s text.
///
/// A corrupt stream can make a decoder log an error for every macroblock, hundreds of thousands of lines inside one
/// `avcodec_send_packet` (found by fuzzing): only messages at the level kept reach the callback (`av_log_set_level`),
/// each is formatted into a stack buffer, and after ``floodLimit`` errors since the last ``clear()`` a thread's further
/// errors are counted, not formatted.
///
/// Set `VIDEOFEED_FFMPEG_LOG=1` in the environment to also print FFmpeg's warnings and errors to stderr.
enum FFmpegLog {
    private static let key = "videofeed.ffmpeg.log"
    /// Errors formatted per thread between two ``clear()`` calls; later ones only count.
    static let floodLimit = 200

    /// Installs the callback once per process. The corresponding FFmpeg functions are `av_log_set_callback` and
    /// `av_log_set_level`.
    static let install: Void = {
        // No single FFmpeg allocation above 256 MiB (the default is 2 GiB): a sample table claiming tens of millions
        // of samples then fails to allocate its index instead of taking gigabytes. The largest legitimate one is
        // far below (an 8K 16-bit plane is 66 MB; a 24-hour 60 fps index 124 MB).
        av_max_alloc(256 << 20)
        av_log_set_level(echo ? AV_LOG_WARNING : AV_LOG_ERROR)
        av_log_set_callback { _, level, format, args in
            guard let format, let args else { return }
            handleLog(level: level, format: format) { buffer, size in vf_format_log(buffer, size, format, args) }
        }
    }()

    static let echo: Bool = ProcessInfo.processInfo.environment["VIDEOFEED_FFMPEG_LOG"].map { $0 != "0" && !$0.isEmpty } ?? false

    /// What one thread has seen since its last ``clear()``. Only ever touched by that thread.
    final class ThreadState {
        var lastError: String?
        var whitelistRefusal: String?
        var errors = 0
    }

    /// This thread's state, created on first use.
    static var state: ThreadState {
        if let state = Thread.current.threadDictionary[key] as? ThreadState { return state }
        let state = ThreadState()
        Thread.current.threadDictionary[key] = state
        return state
    }

    /// Forgets this thread's messages; call before an operation whose error should be explained.
    static func clear() {
        let state = self.state
        state.lastError = nil
        state.whitelistRefusal = nil
        state.errors = 0
    }

    /// What a thread has seen since its last ``clear()``, as a value to carry to another thread.
    struct Snapshot: Sendable {
        var lastError: String?
        var whitelistRefusal: String?
        var errors: Int
    }

    /// This thread's messages since its last ``clear()``.
    static func snapshot() -> Snapshot {
        let state = self.state
        return Snapshot(lastError: state.lastError, whitelistRefusal: state.whitelistRefusal, errors: state.errors)
    }

    /// Makes `snapshot` this thread's messages: work that moves to another thread keeps explaining its errors with
    /// what FFmpeg said before (such as a decoding error logged while the file's streams were probed).
    static func restore(_ snapshot: Snapshot) {
        let state = self.state
        state.lastError = snapshot.lastError
        state.whitelistRefusal = snapshot.whitelistRefusal
        state.errors = snapshot.errors
    }

    /// This thread's last error-level message since ``clear()``, if any.
    static var lastError: String? { state.lastError }

    /// This thread's first "… not on whitelist" message since ``clear()``: FFmpeg refused a nested open.
    static var lastWhitelistRefusal: String? { state.whitelistRefusal }

    static func record(_ message: String, in state: ThreadState) {
        state.lastError = message
        if state.whitelistRefusal == nil, message.contains("not on whitelist") {
            // The whitelist itself can be long: keep the sentence up to it.
            state.whitelistRefusal = message.range(of: "whitelist").map { String(message[..<$0.upperBound]) } ?? message
        }
    }
}

/// FFmpeg calls this from whatever thread logs; it formats the message and keeps it if it is an error.
private func handleLog(level: Int32, format: UnsafePointer<CChar>, _ formatter: (UnsafeMutablePointer<CChar>, Int32) -> Int32) {
    guard level <= AV_LOG_WARNING else { return }
    let isError = level <= AV_LOG_ERROR
    guard isError || FFmpegLog.echo else { return }
    let state = FFmpegLog.state
    if isError {
        state.errors += 1
        if state.errors > FFmpegLog.floodLimit && !FFmpegLog.echo { return }
    }
    let text: String = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 512) { buffer in
        buffer[0] = 0
        _ = formatter(buffer.baseAddress!, Int32(buffer.count))
        buffer[buffer.count - 1] = 0
        return String(cString: buffer.baseAddress!)
    }.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !text.isEmpty else { return }
    if isError { FFmpegLog.record(text, in: state) }
    if FFmpegLog.echo { FileHandle.standardError.write(Data("ffmpeg: \(text)\n".utf8)) }
}
