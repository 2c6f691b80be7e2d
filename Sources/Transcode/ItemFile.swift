import Media
/// A file of an item's folder, by what it is: the one place that names each file the transcode batch writes and the
/// server caches, serves and lists. ``path`` gives its path in the folder and ``init(path:)`` takes one apart again,
/// so the two can never disagree.
///
/// ```
/// <folder>/manifest.json                 the server's plan and codecs strings (never served)
/// <folder>/poster.jpg                    the first frame
/// <folder>/preview.mp4, preview.webp     the card previews
/// <folder>/master.m3u8                   the HLS multivariant playlist
/// <folder>/<rendition>.mp4               a rendition as one fast-start MP4
/// <folder>/<rendition>/init.mp4          its CMAF initialisation segment
/// <folder>/<rendition>/seg-<k>.m4s       its media segment k (0, 1, …; no leading zero)
/// <folder>/<rendition>/index.m3u8        its HLS media playlist
/// ```
public enum ItemFile: Hashable, Sendable {
    case manifest
    case poster
    case preview
    case previewWebP
    case masterPlaylist
    case mp4(rendition: String)
    case initialization(rendition: String)
    case segment(rendition: String, index: Int)
    case mediaPlaylist(rendition: String)

    /// The files directly in an item's folder, by name.
    private static let named: [String: ItemFile] = [
        "manifest.json": .manifest, "poster.jpg": .poster, "preview.mp4": .preview, "preview.webp": .previewWebP,
        "master.m3u8": .masterPlaylist,
    ]
    private static let initName = "init.mp4"
    private static let playlistName = "index.m3u8"
    private static let segmentPrefix = "seg-"
    private static let segmentSuffix = ".m4s"
    private static let mp4Suffix = ".mp4"
    /// Most digits of a segment index in a path.
    private static let maxIndexDigits = 9

    /// The file's path in its item's folder.
    public var path: String {
        switch self {
        case .mp4(let rendition): rendition + Self.mp4Suffix
        case .initialization(let rendition), .segment(let rendition, _), .mediaPlaylist(let rendition):
            rendition + "/" + name
        default: name
        }
    }

    /// The file's own name (its path's last component): a rendition's files are listed by it in its media playlist.
    public var name: String {
        switch self {
        case .mp4(let rendition): rendition + Self.mp4Suffix
        case .initialization: Self.initName
        case .segment(_, let index): Self.segmentPrefix + String(index) + Self.segmentSuffix
        case .mediaPlaylist: Self.playlistName
        default: Self.named.first { $0.value == self }?.key ?? ""
        }
    }

    /// The file's path in `folder`: its cache key in the server's cache.
    public func key(in folder: String) -> String { folder + "/" + path }

    /// The rendition the file belongs to, for a rendition's own files.
    public var rendition: String? {
        switch self {
        case .mp4(let r), .initialization(let r), .segment(let r, _), .mediaPlaylist(let r): r
        default: nil
        }
    }

    /// Whether the server answers requests for it (the manifest is its own bookkeeping).
    public var isServed: Bool { self != .manifest }

    /// The file at `path` in an item's folder; nil for any other path (another name, more folders, a segment index
    /// with a sign, a leading zero or more than nine digits).
    public init?(path: String) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        switch parts.count {
        case 1:
            if let file = Self.named[path] {
                self = file
            } else if path.hasSuffix(Self.mp4Suffix), path.count > Self.mp4Suffix.count {
                self = .mp4(rendition: String(path.dropLast(Self.mp4Suffix.count)))
            } else {
                return nil
            }
        case 2:
            let (rendition, name) = (parts[0], parts[1])
            guard !rendition.isEmpty, rendition != ".", rendition != ".." else { return nil }
            if name == Self.initName {
                self = .initialization(rendition: rendition)
            } else if name == Self.playlistName {
                self = .mediaPlaylist(rendition: rendition)
            } else if name.hasPrefix(Self.segmentPrefix), name.hasSuffix(Self.segmentSuffix) {
                let digits = name.dropFirst(Self.segmentPrefix.count).dropLast(Self.segmentSuffix.count)
                guard !digits.isEmpty, digits.count <= Self.maxIndexDigits,
                      digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits == "0" || digits.first != "0",
                      let index = Int(digits) else { return nil }
                self = .segment(rendition: rendition, index: index)
            } else {
                return nil
            }
        default:
            return nil
        }
    }
}
