import EngineSupport
import Foundation

/// An item to open, checked against the protocol whitelist: what FFmpeg gets, and what errors show.
struct MediaURL: Sendable {
    /// The string handed to `avformat_open_input`.
    let ffmpegURL: String
    /// The item as shown in errors: ``Redaction/redacted(_:)`` (no user info, no secret query values).
    let display: String

    init(_ text: String, whitelist: [String]) throws {
        if let colon = text.range(of: "://"), let scheme = Self.scheme(of: text, before: colon.lowerBound) {
            let display = Redaction.redacted(text)
            guard whitelist.contains(scheme) else {
                throw MediaError(.protocolNotAllowed, operation: "open", item: display,
                                 message: "protocol '\(scheme)' is not in the whitelist (\(whitelist.joined(separator: ",")))")
            }
            if scheme == "file", let url = URL(string: text), url.isFileURL {
                ffmpegURL = "file:" + url.path
            } else {
                ffmpegURL = text
            }
            self.display = display
            return
        }
        guard !text.isEmpty else {
            throw MediaError(.invalidArgument, operation: "open", item: text, message: "empty path")
        }
        guard whitelist.contains("file") else {
            throw MediaError(.protocolNotAllowed, operation: "open", item: text,
                             message: "protocol 'file' is not in the whitelist")
        }
        // A plain path. "file:" keeps FFmpeg from reading "name:with:colons" as a protocol.
        ffmpegURL = "file:" + text
        display = text
    }

    /// For a local file, fails early and clearly on what FFmpeg would report vaguely: a missing file, a folder,
    /// an empty file; and refuses what is not a regular file — a named pipe (FIFO) would block the open past every
    /// time limit (no interrupt reaches a blocking `open(2)`), a device or socket is no media file.
    func checkLocalFile() throws {
        guard ffmpegURL.hasPrefix("file:") else { return }
        let path = String(ffmpegURL.dropFirst("file:".count))
        var st = stat()
        guard stat(path, &st) == 0 else {
            let code = errno
            let kind: MediaError.Kind = code == ENOENT || code == ENOTDIR ? .fileNotFound
                : (code == EACCES ? .permissionDenied : .io)
            throw MediaError(kind, operation: "open", item: display, message: String(cString: strerror(code)))
        }
        switch st.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR:
            throw MediaError(.invalidArgument, operation: "open", item: display, message: "is a folder, not a media file")
        default:
            let what = switch st.st_mode & S_IFMT {
            case S_IFIFO: "a named pipe (FIFO)"
            case S_IFCHR: "a character device"
            case S_IFBLK: "a block device"
            case S_IFSOCK: "a socket"
            default: "a special file"
            }
            throw MediaError(.invalidArgument, operation: "open", item: display,
                             message: "is \(what), not a regular file; only regular files are opened")
        }
        if (st.st_mode & S_IFMT) == S_IFREG && st.st_size == 0 {
            throw MediaError(.invalidData, operation: "open", item: display, message: "the file is empty")
        }
    }

    private static func scheme(of text: String, before end: String.Index) -> String? {
        let scheme = text[..<end]
        guard let first = scheme.first, first.isLetter,
              scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." })
        else { return nil }
        return scheme.lowercased()
    }
}
