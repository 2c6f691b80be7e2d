import ArgumentParser
import Feed
import Foundation

/// The SOURCE argument and the options that say how to load it, shared by `videofeed feed`, `play` and `thumbs`:
/// a folder, a listing file, an http(s) URL (remote → cache, then the bundled feed for browsing commands only), or
/// the bundled feed.
struct FeedSourceOptions: ParsableArguments {
    @Argument(help: "A folder, a listing file, or an http(s) URL. Default: the bundled feed.")
    var source: String?

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

    @Option(help: "Largest listing accepted from a URL, all pages together, e.g. 64MiB; a larger or endless one is cut off.")
    var maxListingSize: ByteCount = .mebibytes(RemoteFeedLoader.defaultMaxListingBytes >> 20)

    @Option(help: "Retries of timeouts and 5xx answers.")
    var retries: Int = 2

    @Option(help: "Display size WxH the Pexels file is chosen for.")
    var display: DisplaySize = .portraitFullHD

    @Option(help: "Order of a folder's items: newest or name.")
    var sort: SortOption = .newest

    @Option(help: "Cache folder for a URL's pages. Default: ~/.cache/videofeed/feeds/<hash of the URL>.")
    var cacheDir: String?

    @Flag(help: "Do not use or fill the cache for a URL.")
    var noCache = false

    @Flag(help: "Fail instead of falling back to the cache or the bundled feed when a URL fails.")
    var noFallback = false

    @Flag(help: """
        thumbs: when a URL and its cache both fail, render the bundled feed instead of ending the run (which \
        removes the outputs of every item not in it). feed and play always fall back, with a warning.
        """)
    var fallbackBundled = false

    @Option(help: "The bundled feed: a feed.json file or the Fixtures folder holding it.")
    var fixtures: String?

    func validate() throws {
        if let pageSize, pageSize < 1 { throw ValidationError("--page-size must be at least 1.") }
        try NumberRules.timeLimit(timeout, "--timeout")
        if retries < 0 || retries > 100 { throw ValidationError("--retries must be from 0 to 100.") }
        if authEnv != nil && authFile != nil { throw ValidationError("Use --auth-env or --auth-file, not both.") }
    }

    /// What the feed is loaded for, which decides whether a failing URL may be replaced by the bundled feed.
    enum Use {
        /// Showing a feed (`feed`, `play`): better the bundled feed, with a loud warning, than nothing.
        case browse
        /// A batch that writes and removes outputs per item (`thumbs`, `demo`): the bundled feed in place of the
        /// real one would remove every output of the real feed as gone, so a URL that cannot be read (nor its cache)
        /// ends the run, unless ``fallbackBundled`` asks for the bundled feed.
        case batch
    }

    /// The loader for ``source`` and the options; `format` is the listing's shape, nil to detect it.
    func makeLoader(format: FeedFormat?, for use: Use) throws -> any FeedLoader {
        let bundled = BundledFeedLoader(explicitPath: fixtures)
        guard let source else { return bundled }
        if let url = URL(string: source), let scheme = url.scheme?.lowercased(), scheme.count > 1 {
            switch scheme {
            case "http", "https":
                return remoteLoader(url, format: format, bundled: use == .browse || fallbackBundled ? bundled : nil)
            case "file": return try localLoader(url.path, format: format)
            default: throw FeedError.unsupportedSource(source)
            }
        }
        return try localLoader(source, format: format)
    }

    /// The loader of ``makeLoader(format:for:)`` set up to be watched, and its watch: a folder lists only complete
    /// files (``FileSettling``) and is watched with inotify, rescanned every `refresh` seconds; a URL's first page is
    /// asked for again every `refresh` seconds (ETag / If-Modified-Since); a listing file (or the bundled feed) is
    /// checked by size and time every `refresh` seconds.
    func makeWatchedLoader(format: FeedFormat?, for use: Use, refresh: Double) throws
        -> (loader: any FeedLoader, watch: SourceWatch) {
        let bundled = BundledFeedLoader(explicitPath: fixtures)
        guard let source else {
            let file = (try? bundled.locate()) ?? URL(fileURLWithPath: "/nonexistent")
            return (bundled, .file(file, refresh: refresh))
        }
        if let url = URL(string: source), let scheme = url.scheme?.lowercased(), scheme.count > 1 {
            switch scheme {
            case "http", "https":
                let (loader, remote) = remoteLoaders(url, format: format,
                                                     bundled: use == .browse || fallbackBundled ? bundled : nil)
                return (loader, .url(remote, refresh: refresh))
            case "file": return try watchedLocalLoader(url.path, format: format, refresh: refresh)
            default: throw FeedError.unsupportedSource(source)
            }
        }
        return try watchedLocalLoader(source, format: format, refresh: refresh)
    }

    private func watchedLocalLoader(_ path: String, format: FeedFormat?, refresh: Double) throws
        -> (loader: any FeedLoader, watch: SourceWatch) {
        switch try localLoader(path, format: format) {
        case let folder as DirectoryFeedLoader:
            let settled = DirectoryFeedLoader(root: folder.root, order: folder.order, extensions: folder.extensions,
                                              settling: FileSettling())
            return (settled, .folder(settled, refresh: refresh))
        case let loader:
            return (loader, .file(URL(fileURLWithPath: path), refresh: refresh))
        }
    }

    private func localLoader(_ path: String, format: FeedFormat?) throws -> any FeedLoader {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw FeedError.unreadable(path: path, reason: "no such file or directory")
        }
        let url = URL(fileURLWithPath: path)
        if isDirectory.boolValue {
            return DirectoryFeedLoader(root: url, order: sort.order)
        }
        return ManifestFeedLoader(file: url, format: format, displaySize: display)
    }

    private func remoteLoader(_ url: URL, format: FeedFormat?, bundled: BundledFeedLoader?) -> any FeedLoader {
        remoteLoaders(url, format: format, bundled: bundled).loader
    }

    /// The loader of a URL (with its cache and fallback, as the options say) and the remote loader inside it.
    private func remoteLoaders(_ url: URL, format: FeedFormat?, bundled: BundledFeedLoader?)
        -> (loader: any FeedLoader, remote: RemoteFeedLoader) {
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
            format: format,
            pageSize: pageSize,
            pexelsPaging: followNextPage ? .followNextPage : .pageNumbers,
            authorization: authorization,
            timeout: timeout,
            retry: RetryPolicy(maxAttempts: retries + 1, initialDelay: 0.5),
            displaySize: display,
            maxListingBytes: maxListingSize.bytes)
        if noFallback { return (remote, remote) }
        let cacheFolder = cacheDir.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? DiskFeedPageCache.defaultDirectory(for: url)
        let primary: any FeedLoader = noCache ? remote : remote.cached(in: DiskFeedPageCache(directory: cacheFolder))
        guard let bundled else { return (primary, remote) }
        return (primary.withFallback(bundled, named: "the bundled feed (not the feed asked for)"), remote)
    }
}
