import ArgumentParser
import Feed
import FeedServer
import Foundation

/// A folder as `videofeed serve` lists it, for the commands that study serving without serving (`simulate
/// calibrate --serve`, `simulate serve`): a ``ServeEngine`` with serve's configuration on a temporary cache, and the
/// items it lists, in order, each named by its path in the folder.
final class ServedFolder {
    let engine: ServeEngine
    let configuration: ServeEngine.Configuration
    /// The items, and each one's name: its path relative to the folder (the name a serve cost profile keys it by).
    let items: [(entry: ServeEngine.ListedItem, name: String)]
    private let cacheURL: URL

    /// Lists `folder` with serve's loader in `order` (serve's `--sort`) and the rendition and open options given;
    /// `command` names the caller in errors. Files serve does not list (a second file of one public ID) are named on stderr with `unlisted`.
    /// - Throws: an `ExitCode` after saying why on stderr: not a folder, no temporary cache, no listing, no item.
    init(folder: String, order: DirectoryFeedLoader.Order, rendition: RenditionOptions,
         mediaPolicy: MediaPolicyOptions, command: String, unlisted: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            Console.error("\(Console.safe(folder)): \(command) needs a folder of media files")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        cacheURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("videofeed-\(command.split(separator: " ").last ?? "serve")-\(getpid())-\(UUID().uuidString.prefix(8))")
        configuration = ServeCommand.engineConfiguration(cache: cacheURL, rendition: rendition,
                                                         mediaPolicy: mediaPolicy, jobTimeLimit: 600)
        let root = URL(fileURLWithPath: folder)
        let feed = Feed(loader: DirectoryFeedLoader(root: root, order: order), prefetchDistance: 10)
        do {
            engine = try ServeEngine(feed: feed, configuration: configuration)
        } catch {
            try? FileManager.default.removeItem(at: cacheURL)
            Console.error("\(command): cannot use a temporary cache \(Console.safe(cacheURL.path)): \(Console.describe(error))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        let engine = self.engine
        let listed: [ServeEngine.ListedItem]
        switch BlockingTask.run({ try await engine.listedItems() }) {
        case .success(let items): listed = items
        case .failure(let error):
            engine.shutdown()
            try? FileManager.default.removeItem(at: cacheURL)
            Console.error("\(Console.safe(folder)): cannot list: \(Console.describe(error))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        if case .success(let skipped) = BlockingTask.run({ await feed.skipped }) {
            for entry in skipped { Console.error("\(Console.safe(entry.description)): \(unlisted)") }
        }
        let rootPath = root.standardizedFileURL.path
        items = listed.map { entry in
            (entry, entry.source.hasPrefix(rootPath + "/") ? String(entry.source.dropFirst(rootPath.count + 1))
                : (entry.source as NSString).lastPathComponent)
        }
        guard !items.isEmpty else {
            close()
            Console.error("\(Console.safe(folder)): serve lists no media file in it")
            throw ExitCode(1)
        }
    }

    /// Stops the engine and removes the temporary cache.
    func close() {
        engine.shutdown()
        try? FileManager.default.removeItem(at: cacheURL)
    }
}
