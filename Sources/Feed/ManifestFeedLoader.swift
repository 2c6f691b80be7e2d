import Foundation

/// Reads a local listing file in any ``FeedFormat`` as one page.
///
/// A relative `url` in the file resolves against the folder that holds the file. Pexels videos, which carry no
/// creation date, get the file's modification time. A local file has no following page, even when it was saved from
/// a paged API: its `next_cursor` or `next_page` is noted in ``FeedPage/warnings`` and not followed.
public struct ManifestFeedLoader: FeedLoader {
    /// The listing file, as an absolute file URL.
    public let file: URL
    /// The expected shape, or `nil` to detect it.
    public let format: FeedFormat?
    /// The display size Pexels renditions are chosen for.
    public let displaySize: DisplaySize

    /// Creates a loader for the listing file at `file`.
    public init(file: URL, format: FeedFormat? = nil, displaySize: DisplaySize = .portraitFullHD) {
        self.file = file.absoluteURL.standardizedFileURL
        self.format = format
        self.displaySize = displaySize
    }

    /// The whole listing for `nil`; ``FeedPage/end`` for any other cursor.
    public func loadPage(at cursor: FeedCursor?) async throws -> FeedPage {
        guard cursor == nil else { return .end }
        let file = file
        let (data, modified) = try await BlockingWork.run { () throws -> (Data, Date) in
            // A named pipe would block the read forever; a device is no listing.
            var info = stat()
            if stat(file.path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG, (info.st_mode & S_IFMT) != S_IFDIR {
                throw FeedError.unreadable(path: file.path, reason: "not a regular file (a named pipe, device or socket)")
            }
            do {
                let data = try Data(contentsOf: file)
                let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
                return (data, attributes?[.modificationDate] as? Date ?? Date())
            } catch {
                throw FeedError.unreadable(path: file.path, reason: Self.reason(error))
            }
        }
        let parser = FeedDocumentParser(
            format: format,
            baseURL: file.deletingLastPathComponent(),
            displaySize: displaySize,
            listedAt: modified,
            sourceName: file.path)
        let document = try parser.parse(data)
        var page = FeedPage(items: document.items, skipped: document.skipped)
        if document.hasNextPage {
            page.warnings.append("\(file.path) is one page of a longer listing; a local file is read as one page")
        }
        return page
    }

    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoSuchFileError {
            return "no such file"
        }
        return SystemErrorText.reason(nsError)
    }
}
