import ArgumentParser
import Foundation
import Media

/// Output helpers shared by the subcommands.
enum Console {
    /// Writes one line to standard error, prefixed with the program name.
    static func error(_ line: String) {
        FileHandle.standardError.write(Data("videofeed: \(line)\n".utf8))
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

    /// One line for any error: ``MediaError``'s own description, or the error's localized description.
    static func describe(_ error: Error) -> String {
        if let media = error as? MediaError { return media.description }
        return String(describing: error)
    }
}

extension PixelFormat: ExpressibleByArgument {}

extension Size: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}
