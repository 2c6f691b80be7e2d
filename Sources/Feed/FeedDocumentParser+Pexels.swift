import Foundation

extension FeedDocumentParser {
    /// `{"page", "per_page", "total_results", "videos": [...], "next_page"}` as the Pexels video API returns it.
    func parsePexels(_ root: JSONValue, _ resolver: SourceResolver) throws(FeedError) -> FeedDocument {
        guard let fields = root.objectValue else {
            throw malformed("a Pexels listing is a JSON object, not \(root.kindDescription)")
        }
        guard case .array(let videos)? = fields["videos"] else {
            throw malformed("a Pexels listing needs a \"videos\" array")
        }
        let entries = videos.enumerated().map { (index: $0.offset, value: Optional($0.element)) }
        var document = collect(.pexels, entries) { value throws(EntryProblem) in try pexelsItem(value, resolver) }
        let header: EntryReader
        do {
            header = try EntryReader(root)
            document.page = try header.optionalCount("page").map { Int($0) }
            document.totalResults = try header.optionalCount("total_results").map { Int($0) }
            if let next = try header.optionalString("next_page") {
                document.nextPageURL = try resolver.resolve(next, field: "next_page")
            }
        } catch {
            throw malformed(error.reason)
        }
        return document
    }

    /// `{"id", "url", "duration", "width", "height", "user", "video_files": [...]}`; the source is the video file
    /// that best fits ``displaySize``. Pexels states no creation date: `created_at` is used when present, otherwise
    /// ``listedAt``.
    private func pexelsItem(_ value: JSONValue, _ resolver: SourceResolver) throws(EntryProblem) -> FeedItem {
        let entry = try EntryReader(value)
        guard let id = entry.identity("id") else { throw EntryProblem(reason: "missing \"id\"") }
        guard case .array(let files)? = entry.value("video_files") else {
            throw EntryProblem(reason: "missing \"video_files\" array")
        }
        let renditions = files.compactMap { file in rendition(file, resolver) }
        guard let best = VideoRendition.bestFit(renditions, for: displaySize) else {
            throw EntryProblem(reason: "none of the \(files.count) video_files has a usable link")
        }
        return FeedItem(
            publicID: id,
            createdAt: try entry.optionalDate("created_at", parse: FeedDate.parseISO8601) ?? listedAt,
            source: best.link,
            duration: try entry.optionalNumber("duration"),
            width: best.width,
            height: best.height,
            format: Self.format(of: best)
        )
    }

    /// A `video_files` entry; `nil` (not usable) without a valid link. A bad size counts as unknown.
    private func rendition(_ value: JSONValue, _ resolver: SourceResolver) -> VideoRendition? {
        guard let file = try? EntryReader(value),
              let text = try? file.requiredString("link"),
              let link = try? resolver.resolve(text, field: "link")
        else { return nil }
        let width = (try? file.optionalCount("width")).flatMap { $0 }.map { Int($0) }
        let height = (try? file.optionalCount("height")).flatMap { $0 }.map { Int($0) }
        return VideoRendition(
            link: link, width: width, height: height,
            quality: try? file.optionalString("quality"), fileType: try? file.optionalString("file_type"))
    }

    /// `mp4` from `video/mp4`, else the link's extension.
    private static func format(of rendition: VideoRendition) -> String? {
        if let type = rendition.fileType, let slash = type.lastIndex(of: "/") {
            let subtype = type[type.index(after: slash)...].lowercased()
            if !subtype.isEmpty { return subtype }
        }
        let ext = rendition.link.pathExtension.lowercased()
        return ext.isEmpty ? nil : ext
    }
}
