internal import CFFmpeg
import EngineSupport

/// The one error type of the Media module.
///
/// Every failure names the operation that failed, the item it failed on (a path, or a URL as ``Redaction`` shows it), a
/// readable ``Kind`` to branch on, and FFmpeg's own message (`av_strerror`) when FFmpeg reported it.
/// Expected outcomes — "decoder needs more input", "end of stream" — are never errors: see ``DecodeResult``.
public struct MediaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, in words a caller can branch on.
    public enum Kind: String, Sendable, Equatable, Codable, CaseIterable {
        /// The file or URL does not exist (ENOENT, HTTP 404).
        case fileNotFound
        /// The process may not read the item (EACCES, EPERM, HTTP 401/403).
        case permissionDenied
        /// The URL's protocol is not in the ``OpenOptions/protocolWhitelist``.
        case protocolNotAllowed
        /// The open policy refused the item: a format that opens other URLs (a playlist) without
        /// ``OpenOptions/allowsPlaylists``, a format that is never opened, or a nested open outside the whitelist
        /// (such as `file:` from a remote playlist).
        case policyViolation
        /// The container format is not one FFmpeg recognises.
        case unsupportedFormat
        /// The item opened but has no video stream (nor a cover picture).
        case noVideoStream
        /// No decoder or encoder for the codec, or the codec feature is unimplemented.
        case unsupportedCodec
        /// Corrupt, truncated or not-media data.
        case invalidData
        /// A read or write failed (disk, network, HTTP 5xx).
        case io
        /// The open, read or per-item time limit passed.
        case timedOut
        /// The caller's ``CancellationToken`` was cancelled.
        case cancelled
        /// A configured limit (frame size, pixel count, decoded bytes) was exceeded, or memory ran out.
        case limitExceeded
        /// The caller passed a value the operation cannot use (a zero-size box, a seek target that is not finite).
        case invalidArgument
        /// Anything else FFmpeg reported.
        case other
    }

    /// What went wrong.
    public let kind: Kind
    /// The operation that failed, e.g. `"open"`, `"decode"`, `"encode png"`.
    public let operation: String
    /// The item the operation worked on: a path, or a URL without user info and secret query values
    /// (``Redaction/redacted(_:)`` is applied to whatever the caller gives).
    public let item: String
    /// FFmpeg's own message for ``code`` (from `av_strerror`), or a message of ours when FFmpeg reported nothing.
    public let message: String
    /// The negative FFmpeg error code, when the failure came from FFmpeg.
    public let code: Int32?

    /// Creates an error; Media builds most of them from FFmpeg's return codes. `item` is redacted
    /// (``Redaction/redacted(_:)``), so no error names a secret whoever builds it.
    public init(_ kind: Kind, operation: String, item: String, message: String, code: Int32? = nil) {
        self.kind = kind
        self.operation = operation
        self.item = Redaction.redacted(item)
        self.message = message
        self.code = code
    }

    /// The operation of an error that asks for a media segment after the item's last (``isPastEnd``).
    public static let pastEndOperation = "transcode past the end"

    /// Whether this asks for a media segment after the item's last: its index is at least the plan's segment count,
    /// or its span of the source holds no picture (the video ends before it). A server answers it as the end of the
    /// item, not as a failure.
    public var isPastEnd: Bool { operation == Self.pastEndOperation }

    /// One line: `item: operation failed: kind (message)`.
    public var description: String {
        "\(item): \(operation) failed: \(kind.readable) (\(message))"
    }
}

extension MediaError.Kind {
    /// A few words for humans, used in ``MediaError/description``.
    public var readable: String {
        switch self {
        case .fileNotFound: "file not found"
        case .permissionDenied: "permission denied"
        case .protocolNotAllowed: "protocol not allowed"
        case .policyViolation: "refused by policy"
        case .unsupportedFormat: "unsupported format"
        case .noVideoStream: "no video stream"
        case .unsupportedCodec: "unsupported codec"
        case .invalidData: "invalid data"
        case .io: "I/O error"
        case .timedOut: "timed out"
        case .cancelled: "cancelled"
        case .limitExceeded: "limit exceeded"
        case .invalidArgument: "invalid argument"
        case .other: "error"
        }
    }
}

// MARK: - From FFmpeg error codes

extension MediaError {
    /// FFmpeg's text for an error code. The corresponding FFmpeg function is `av_strerror`.
    static func ffmpegMessage(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: Int(vf_error_max_string_size()) + 1)
        if av_strerror(code, &buffer, buffer.count) < 0 {
            return "FFmpeg error \(code)"
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Classifies a negative FFmpeg return value. `interrupt` tells whether an `AVERROR_EXIT` was a cancel or a timeout.
    static func ffmpeg(
        _ code: Int32, operation: String, item: String, interrupt: InterruptState? = nil
    ) -> MediaError {
        var kind: Kind
        switch code {
        case vf_averror(ENOENT), vf_averror_http_not_found(): kind = .fileNotFound
        case vf_averror(EACCES), vf_averror(EPERM), vf_averror_http_forbidden(), vf_averror_http_unauthorized():
            kind = .permissionDenied
        case vf_averror_invaliddata(), vf_averror_eof(): kind = .invalidData
        case vf_averror_demuxer_not_found(): kind = .unsupportedFormat
        case vf_averror_protocol_not_found(): kind = .protocolNotAllowed
        case vf_averror_decoder_not_found(), vf_averror_encoder_not_found(), vf_averror_patchwelcome(): kind = .unsupportedCodec
        case vf_averror_stream_not_found(): kind = .noVideoStream
        case vf_averror(ETIMEDOUT): kind = .timedOut
        case vf_averror(ENOMEM): kind = .limitExceeded
        case vf_averror(EINVAL), vf_averror(ERANGE): kind = .invalidArgument
        case vf_averror_exit():
            kind = interrupt?.timedOut == true ? .timedOut : .cancelled
        case vf_averror(EIO), vf_averror(ECONNREFUSED), vf_averror(ECONNRESET), vf_averror(EPIPE),
             vf_averror(EHOSTUNREACH), vf_averror(ENETUNREACH), vf_averror(EISDIR), vf_averror(ENOSPC),
             vf_averror_http_server_error(), vf_averror_http_bad_request(), vf_averror_http_other_4xx():
            kind = .io
        default: kind = .other
        }
        if kind != .timedOut && kind != .cancelled, let interrupt {
            // The interrupt fired and the demuxer turned the aborted read into another code.
            if interrupt.timedOut { kind = .timedOut } else if interrupt.isCancelled { kind = .cancelled }
        }
        var message = ffmpegMessage(code)
        // A nested open refused by the whitelists FFmpeg was given ("Protocol 'file' not on whitelist …",
        // "Format not on whitelist …") is the open policy at work, whatever code the demuxer turned it into.
        if code != vf_averror_exit(), let detail = FFmpegLog.lastWhitelistRefusal {
            return MediaError(.policyViolation, operation: operation, item: item,
                              message: "\(message): \(detail)", code: code)
        }
        if kind == .timedOut || kind == .cancelled, let interrupt, interrupt.timedOut || interrupt.isCancelled {
            message = interrupt.timedOut ? interrupt.expiredLimit?.phrase ?? "a time limit passed" : "cancelled by the caller"
        } else if let detail = FFmpegLog.lastError, detail != message {
            message += ": " + detail
        }
        return MediaError(kind, operation: operation, item: item, message: message, code: code)
    }
}
