import Foundation

/// The feed that ships with the project, `Fixtures/feed.json` (a native manifest whose relative URLs point into
/// `Fixtures/`): the default when no source is given, and the last fallback.
///
/// The file is looked for, in order:
/// 1. at the explicit path given, if any (a `feed.json` file or the `Fixtures` folder holding it);
/// 2. at `$VIDEOFEED_FIXTURES` (likewise a file or the folder);
/// 3. in `Fixtures/feed.json` of the current directory or any folder above it;
/// 4. in `Fixtures/feed.json` of the executable's folder or any folder above it.
///
/// An explicit path or `VIDEOFEED_FIXTURES` that names no feed is an error rather than skipped. The search happens
/// on each load, so creating the loader never fails.
public struct BundledFeedLoader: FeedLoader {
    /// The environment variable that names the fixtures: `VIDEOFEED_FIXTURES`.
    public static let environmentVariable = "VIDEOFEED_FIXTURES"

    /// The path given explicitly, if any.
    public let explicitPath: String?
    private let environmentValue: String?
    private let currentDirectory: URL
    private let executable: URL?

    /// Creates a loader that searches as described above. The defaults are this process's environment, current
    /// directory and executable.
    public init(
        explicitPath: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        currentDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true),
        executable: URL? = Bundle.main.executableURL
    ) {
        self.explicitPath = explicitPath
        self.environmentValue = environment[Self.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        self.currentDirectory = currentDirectory
        self.executable = executable
    }

    /// The location of `feed.json`, found as described above.
    public func locate() throws(FeedError) -> URL {
        if let explicitPath { return try Self.feedFile(at: explicitPath, named: explicitPath) }
        if let environmentValue {
            return try Self.feedFile(at: environmentValue, named: "\(Self.environmentVariable)=\(environmentValue)")
        }
        var searched: [String] = []
        var starts = [currentDirectory.standardizedFileURL]
        if let executable { starts.append(executable.resolvingSymlinksInPath().deletingLastPathComponent()) }
        for start in starts {
            if let found = Self.searchUpwards(from: start) { return found }
            searched.append("Fixtures/feed.json in \(start.path) and above")
        }
        throw .bundledFeedNotFound(searched: searched)
    }

    /// The bundled manifest for `nil`; ``FeedPage/end`` for any other cursor.
    public func loadPage(at cursor: FeedCursor?) async throws -> FeedPage {
        guard cursor == nil else { return .end }
        return try await ManifestFeedLoader(file: locate(), format: .manifest).loadPage(at: nil)
    }

    private static func feedFile(at path: String, named name: String) throws(FeedError) -> URL {
        var isDirectory: ObjCBool = false
        let url = URL(fileURLWithPath: path).standardizedFileURL
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
            if !isDirectory.boolValue { return url }
            let inside = url.appendingPathComponent("feed.json")
            if FileManager.default.fileExists(atPath: inside.path) { return inside }
        }
        throw .bundledFeedNotFound(searched: [name])
    }

    private static func searchUpwards(from start: URL) -> URL? {
        var folder = start
        while true {
            let candidate = folder.appendingPathComponent("Fixtures/feed.json")
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
            let parent = folder.deletingLastPathComponent().standardizedFileURL
            if parent.path == folder.path { return nil }
            folder = parent
        }
    }
}
