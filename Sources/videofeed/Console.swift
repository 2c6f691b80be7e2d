import ArgumentParser
import Feed
import Foundation
import Media

/// Output helpers shared by the subcommands.
enum Console {
    /// Writes one line to standard error, prefixed with the program name.
    static func error(_ line: String) {
        FileHandle.standardError.write(Data("videofeed: \(line)\n".utf8))
    }

    /// Writes a warning a person must not miss (the feed shown is not the one asked for, a cached copy stands in for
    /// a listing) to standard error: `videofeed: WARNING: …`.
    static func warning(_ line: String) {
        error("WARNING: " + line)
    }

    /// Writes text to standard output without buffering surprises between stdout and stderr.
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// A JSON encoder with stable, readable output.
    static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// `text` padded with spaces to `width` characters (left-aligned); longer text is kept whole.
    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// `text` with every control character (C0, DEL, C1: an ESC sequence could retitle or clear a terminal, a
    /// newline split a table row) shown as a visible escape such as `\x1b` or `\n`, for names from files and feeds.
    static func safe(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0a: out += "\\n"
            case 0x0d: out += "\\r"
            case 0x09: out += "\\t"
            case 0..<0x20, 0x7f...0x9f: out += String(format: "\\x%02x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// One line for any error: ``MediaError``'s own description, or the error's localized description.
    /// Foundation's errors get their cause in words (``SystemErrorText``); control characters are made visible.
    static func describe(_ error: Error) -> String {
        if let media = error as? MediaError { return safe(media.description) }
        let domain = (error as NSError).domain
        if [NSCocoaErrorDomain, NSURLErrorDomain, NSPOSIXErrorDomain].contains(domain) {
            return safe(SystemErrorText.reason(error))
        }
        return safe(String(describing: error))
    }
}

extension PixelFormat: ExpressibleByArgument {}

extension Size: ExpressibleByArgument {
    /// `WxH` with each side from 1 to 16384, the largest picture a decoded frame may be (``OpenOptions/maxDimension``).
    public init?(argument: String) {
        guard let size = Size(parsing: argument), size.width <= 16384, size.height <= 16384 else { return nil }
        self = size
    }
}
