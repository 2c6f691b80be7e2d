import ArgumentParser
import Dispatch
import Feed
import Foundation

/// `videofeed feed [SOURCE]`: lists a feed's items as a table or as a JSON manifest.
struct FeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "List a feed: public_id, created_at and source of each item.",
        discussion: """
            SOURCE is a folder of media files, a listing file (native manifest as JSON or JSON Lines, Cloudinary, \
            Pexels, or image-feed JSON), or an http(s) URL of a listing. Without SOURCE, the bundled feed \
            Fixtures/feed.json (found through --fixtures, $VIDEOFEED_FIXTURES, or above the current directory).
            A URL is loaded remote → cache → bundled: when it fails, the last good copy in the cache is listed, \
            else the bundled feed, with a warning on stderr. Warnings and skipped entries go to stderr.
            """
    )

    @OptionGroup var feedSource: FeedSourceOptions

    @Flag(help: "Print the items as a JSON array in the native manifest format.")
    var json = false

    @Option(help: "List at most this many items (pages are loaded only as far as needed).")
    var limit: Int?

    @Option(help: "The listing's shape: manifest, cloudinary, pexels or imagefeed. Default: detected.")
    var format: FeedFormatOption?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1.") }
    }

    func run() async throws {
        let listing: FeedListing
        do {
            let loader = try feedSource.makeLoader(format: format?.feedFormat, for: .browse)
            listing = FeedListing(loader: loader, limit: limit, json: json)
        } catch {
            Self.fail(error)
        }
        let output: FeedListing.Output
        do {
            output = try await listing.render()
        } catch {
            Self.fail(error)
        }
        for line in output.diagnostics { FileHandle.standardError.write(Data((line + "\n").utf8)) }
        FileHandle.standardOutput.write(Data(output.text.utf8))
        // Exit 1 when entries were invalid: they are items of the feed that could not be listed.
        if output.invalidEntries > 0 { Self.exit(withError: ExitCode(ExitStatus.someFailed)) }
    }

    /// Prints one line to stderr and exits with status 2: the feed could not be listed at all.
    private static func fail(_ error: any Error) -> Never {
        FileHandle.standardError.write(Data("videofeed feed: error: \(Console.describe(error))\n".utf8))
        Self.exit(withError: ExitCode(ExitStatus.couldNotRun))
    }
}

/// `--format` values.
enum FeedFormatOption: String, CaseIterable, ExpressibleByArgument {
    case manifest, cloudinary, pexels, imagefeed

    var feedFormat: FeedFormat {
        switch self {
        case .manifest: .manifest
        case .cloudinary: .cloudinary
        case .pexels: .pexels
        case .imagefeed: .imagefeed
        }
    }
}

/// `--sort` values.
enum SortOption: String, CaseIterable, ExpressibleByArgument {
    case newest, name

    /// The folder listing's order.
    var order: DirectoryFeedLoader.Order { self == .name ? .name : .newestFirst }
}
