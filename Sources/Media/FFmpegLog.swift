internal import CFFmpeg
import Foundation

/// Routes FFmpeg's log (`av_log`) away from the terminal and keeps the last error-level message of each thread, so
/// that a ``MediaError`` can carry FFmpeg's own explanation ("moov atom not found") next to `av_strerror`'s text.
///
/// Set `VIDEOFEED_FFMPEG_LOG=1` in the environment to also print FFmpeg's warnings and errors to stderr.
enum FFmpegLog {
    private static let key = "videofeed.ffmpeg.lastError"
    private static let refusalKey = "videofeed.ffmpeg.whitelistRefusal"

    /// Installs the callback once per process. The corresponding FFmpeg function is `av_log_set_callback`.
    static let install: Void = {
        av_log_set_callback { _, level, format, args in
            guard let format, let args else { return }
            handleLog(level: level, format: format) { buffer, size in vf_format_log(buffer, size, format, args) }
        }
    }()

    static let echo: Bool = ProcessInfo.processInfo.environment["VIDEOFEED_FFMPEG_LOG"].map { $0 != "0" && !$0.isEmpty } ?? false

    /// Forgets this thread's last message; call before an operation whose error should be explained.
    static func clear() {
        Thread.current.threadDictionary.removeObject(forKey: key)
        Thread.current.threadDictionary.removeObject(forKey: refusalKey)
    }

    /// This thread's first "… not on whitelist" message since ``clear()``: FFmpeg refused a nested open.
    static var lastWhitelistRefusal: String? { Thread.current.threadDictionary[refusalKey] as? String }

    /// This thread's last error-level message since ``clear()``, if any.
    static var lastError: String? { Thread.current.threadDictionary[key] as? String }

    static func record(_ message: String) {
        Thread.current.threadDictionary[key] = message
        if message.contains("not on whitelist"), lastWhitelistRefusal == nil {
            // The whitelist itself can be long: keep the sentence up to it.
            let short = message.range(of: "whitelist").map { String(message[..<$0.upperBound]) } ?? message
            Thread.current.threadDictionary[refusalKey] = short
        }
    }
}

/// FFmpeg calls this from whatever thread logs; it formats the message and keeps it if it is an error.
private func handleLog(level: Int32, format: UnsafePointer<CChar>, _ formatter: (UnsafeMutablePointer<CChar>, Int32) -> Int32) {
    guard level <= AV_LOG_WARNING else { return }
    var buffer = [CChar](repeating: 0, count: 512)
    _ = buffer.withUnsafeMutableBufferPointer { formatter($0.baseAddress!, Int32($0.count)) }
    let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    guard !text.isEmpty else { return }
    if level <= AV_LOG_ERROR { FFmpegLog.record(text) }
    if FFmpegLog.echo { FileHandle.standardError.write(Data("ffmpeg: \(text)\n".utf8)) }
}
