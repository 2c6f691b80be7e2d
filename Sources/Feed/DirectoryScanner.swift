import Foundation

/// The recursive file walk behind ``DirectoryFeedLoader``: blocking, so it runs through ``BlockingWork``.
struct DirectoryScanner: Sendable {
    let root: URL
    let extensions: Set<String>

    private static let keys: [URLResourceKey] = [
        .isDirectoryKey, .isRegularFileKey, .isSymbolicLinkKey, .contentModificationDateKey, .fileSizeKey,
    ]

    /// The file every batch output folder holds (`OutputLock`'s lock file): folders that have it are not scanned.
    static let outputMarker = ".videofeed.lock"

    /// Lists the media files; a sub-folder that cannot be read is reported as a skipped entry.
    func scan() throws -> FeedPage {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw FeedError.unreadable(path: root.path, reason: "not a directory")
        }
        var files: [(relativePath: String, item: FeedItem)] = []
        var skipped: [SkippedEntry] = []
        do {
            try walk(root, relativePath: "", into: &files, skipped: &skipped)
        } catch {
            throw FeedError.unreadable(path: root.path, reason: Self.reason(error))
        }
        files.sort { $0.relativePath < $1.relativePath }
        var items: [FeedItem] = []
        var firstPath: [String: String] = [:]
        for file in files {
            if let first = firstPath[file.item.publicID] {
                skipped.append(SkippedEntry(index: nil, id: file.relativePath, reason: "same public_id as \(first)"))
                continue
            }
            firstPath[file.item.publicID] = file.relativePath
            items.append(file.item)
        }
        return FeedPage(items: items, skipped: skipped)
    }

    private func walk(
        _ folder: URL, relativePath: String,
        into files: inout [(relativePath: String, item: FeedItem)], skipped: inout [SkippedEntry]
    ) throws {
        let children = try FileManager.default.contentsOfDirectory(
            at: folder, includingPropertiesForKeys: Self.keys, options: [.skipsHiddenFiles])
        for child in children {
            let name = child.lastPathComponent
            guard !name.hasPrefix(".") else { continue }
            let path = relativePath.isEmpty ? name : relativePath + "/" + name
            let values = try? child.resourceValues(forKeys: Set(Self.keys))
            if values?.isDirectory == true {
                guard values?.isSymbolicLink != true else { continue }
                // An output folder of the engine's batches (thumbs, transcode) is no part of the feed, wherever it
                // lies: `thumbs DIR --out DIR/thumbs` run twice must not take its own images as new items.
                guard !FileManager.default.fileExists(atPath: child.appendingPathComponent(Self.outputMarker).path)
                else { continue }
                do {
                    try walk(child, relativePath: path, into: &files, skipped: &skipped)
                } catch {
                    skipped.append(SkippedEntry(
                        index: nil, id: path, reason: "cannot read folder: \(Self.reason(error))"))
                }
                continue
            }
            let ext = child.pathExtension.lowercased()
            guard extensions.contains(ext), let item = item(child, path, ext) else { continue }
            files.append((path, item))
        }
    }

    /// The item for a regular file (following a symbolic link to a file).
    private func item(_ file: URL, _ relativePath: String, _ ext: String) -> FeedItem? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file.resolvingSymlinksInPath().path),
              attributes[.type] as? FileAttributeType == .typeRegular,
              let modified = attributes[.modificationDate] as? Date
        else { return nil }
        let size = (attributes[.size] as? NSNumber)?.int64Value
        let publicID = String(relativePath.dropLast(ext.count + 1))
        return FeedItem(publicID: publicID, createdAt: modified, source: file, bytes: size, format: ext)
    }

    /// Ascending by name, numbers by value, ties broken by plain code-point order so the order is total.
    static func namesAscending(_ lhs: String, _ rhs: String) -> Bool {
        switch lhs.compare(rhs, options: [.numeric]) {
        case .orderedAscending: true
        case .orderedDescending: false
        case .orderedSame: lhs < rhs
        }
    }

    private static func reason(_ error: any Error) -> String {
        SystemErrorText.reason(error)
    }
}
