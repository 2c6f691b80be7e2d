import ArgumentParser
import Dispatch
import Feed
import Foundation

/// `videofeed feed [SOURCE]`: lists a feed's items as a table or as a JSON manifest.
struct FeedCommand: ParsableCommand {
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

    @Argument(help: "A folder, a listing file, or an http(s) URL. Default: the bundled feed.")
    var source: String?

    @Flag(help: "Print the items as a JSON array in the native manifest format.")
    var json = false

    @Option(help: "List at most this many items (pages are loaded only as far as needed).")
    var limit: Int?

    @Option(help: "The listing's shape: manifest, cloudinary, pexels or imagefeed. Default: detected.")
    var format: FeedFormatOption?

    @Option(help: "Items per page to ask a paged API for (max_results, per_page).")
    var pageSize: Int?

    @Flag(help: "Page Pexels listings by following next_page instead of page numbers.")
    var followNextPage = false

    @Option(help: "Environment variable holding the Authorization header value for a URL.")
    var authEnv: String?

    @Option(help: "File holding the Authorization header value for a URL.")
    var authFile: String?

    @Option(help: "Seconds to wait for each HTTP answer.")
    var timeout: Double = 15

    @Option(help: "Retries of timeouts and 5xx answers.")
    var retries: Int = 2

    @Option(help: "Display size WxH the Pexels file is chosen for.")
    var display: String = "1080x1920"

    @Option(help: "Order of a folder's items: newest or name.")
    var sort: SortOption = .newest

    @Option(help: "Cache folder for a URL's pages. Default: ~/.cache/videofeed/feeds/<hash of the URL>.")
    var cacheDir: String?

    @Flag(help: "Do not use or fill the cache for a URL.")
    var noCache = false

    @Flag(help: "Fail instead of falling back to the cache or the bundled feed when a URL fails.")
    var noFallback = false

    @Option(help: "The bundled feed: a feed.json file or the Fixtures folder holding it.")
    var fixtures: String?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1.") }
        if let pageSize, pageSize < 1 { throw ValidationError("--page-size must be at least 1.") }
        if !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds.") }
        if retries < 0 { throw ValidationError("--retries must be 0 or more.") }
        if authEnv != nil && authFile != nil { throw ValidationError("Use --auth-env or --auth-file, not both.") }
        if Self.displaySize(display) == nil { throw ValidationError("--display must look like 1080x1920.") }
    }

    func run() throws {
        let listing: FeedListing
        do {
            listing = try FeedListing(loader: makeLoader(), limit: limit, json: json)
        } catch {
            Self.fail(error)
        }
        switch BlockingTask.run({ try await listing.render() }) {
        case .success(let output):
            for line in output.diagnostics { FileHandle.standardError.write(Data((line + "\n").utf8)) }
            FileHandle.standardOutput.write(Data(output.text.utf8))
        case .failure(let error):
            Self.fail(error)
        }
    }

    /// The loader for ``source`` and the options.
    private func makeLoader() throws -> any FeedLoader {
        let bundled = BundledFeedLoader(explicitPath: fixtures)
        guard let source else { return bundled }
        if let url = URL(string: source), let scheme = url.scheme?.lowercased(), scheme.count > 1 {
            switch scheme {
            case "http", "https": return remoteLoader(url, bundled: bundled)
            case "file": return try localLoader(url.path)
            default: throw FeedError.unsupportedSource(source)
            }
        }
        return try localLoader(source)
    }

    private func localLoader(_ path: String) throws -> any FeedLoader {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw FeedError.unreadable(path: path, reason: "no such file or directory")
        }
        let url = URL(fileURLWithPath: path)
        if isDirectory.boolValue {
            return DirectoryFeedLoader(root: url, order: sort == .name ? .name : .newestFirst)
        }
        return ManifestFeedLoader(file: url, format: format?.feedFormat, displaySize: Self.displaySize(display)!)
    }

    private func remoteLoader(_ url: URL, bundled: BundledFeedLoader) -> any FeedLoader {
        let authorization: AuthorizationSource?
        if let authEnv {
            authorization = .environment(authEnv)
        } else if let authFile {
            authorization = .file(URL(fileURLWithPath: authFile))
        } else {
            authorization = nil
        }
        let remote = RemoteFeedLoader(
            url: url,
            format: format?.feedFormat,
            pageSize: pageSize,
            pexelsPaging: followNextPage ? .followNextPage : .pageNumbers,
            authorization: authorization,
            timeout: timeout,
            retry: RetryPolicy(maxAttempts: retries + 1, initialDelay: 0.5),
            displaySize: Self.displaySize(display)!)
        if noFallback { return remote }
        let cacheFolder = cacheDir.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? DiskFeedPageCache.defaultDirectory(for: url)
        let primary: any FeedLoader = noCache ? remote : remote.cached(in: DiskFeedPageCache(directory: cacheFolder))
        return primary.withFallback(bundled)
    }

    static func displaySize(_ text: String) -> DisplaySize? {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else {
            return nil
        }
        return DisplaySize(width: width, height: height)
    }

    /// Prints one line to stderr and exits with status 1.
    private static func fail(_ error: any Error) -> Never {
        FileHandle.standardError.write(Data("videofeed feed: error: \(error)\n".utf8))
        Self.exit(withError: ExitCode.failure)
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
}
