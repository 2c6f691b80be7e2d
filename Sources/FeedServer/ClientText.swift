import EngineSupport
import Foundation
import Media

/// What a client may read of a failure: the item's public ID and a short reason, never a path of the server (its
/// sources, its cache, a temporary file's pid) nor a secret. The whole error goes to the log.
enum ClientText {
    /// `<item>: <what failed>` for `error`.
    static func reason(for error: any Error, item: String) -> String {
        let why: String
        switch error {
        case let media as MediaError:
            // FFmpeg's words, or ours (a limit and why), without any path in them.
            let message = withoutPaths(media.message)
            why = "\(media.operation) failed: \(media.kind.readable)" + (message.isEmpty ? "" : " (\(message))")
        case let cache as CacheError:
            why = cache.isOutOfSpace ? "the server's cache is full" : "the server could not store it"
        case is CancellationError:
            why = "cancelled"
        default:
            why = withoutPaths(Redaction.redacted(String(describing: error)))
        }
        return "\(item): \(why)"
    }

    /// `text` with every absolute path (a word starting with `/`, or with `"/`, `'/`, `(/`) cut to its last
    /// component, and every URL redacted.
    static func withoutPaths(_ text: String) -> String {
        var out = ""
        var word = ""
        func flush() {
            defer { word = "" }
            guard let slash = word.firstIndex(of: "/") else { out += word; return }
            let lead = word[..<slash]
            guard lead.allSatisfy({ "\"'(`[".contains($0) }) else { out += word; return }
            // The path runs to the end of the word, less trailing punctuation (`:` after a path, a closing quote).
            var path = word[slash...]
            var tail = Substring()
            while let last = path.last, ":,;)\"'`]".contains(last) {
                tail = path.suffix(1) + tail
                path = path.dropLast()
            }
            let name = path.split(separator: "/").last.map(String.init) ?? ""
            out += lead + name + tail
        }
        for character in Redaction.redacted(text) {
            if character.isWhitespace {
                flush()
                out.append(character)
            } else {
                word.append(character)
            }
        }
        flush()
        return out
    }
}

extension CacheError {
    /// Whether the file could not be written for want of space (ENOSPC, EDQUOT).
    var isOutOfSpace: Bool {
        let text = reason.lowercased()
        return text.contains("no space left") || text.contains("quota") || text.contains("enospc")
    }
}
