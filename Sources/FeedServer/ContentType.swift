import Foundation
import Transcode

/// The server's one table of content types, by file extension: the page's files (`WebFiles`) and an item's files
/// (`/media/`, ``ItemFile``) alike; anything else is `application/octet-stream`.
enum ContentType {
    /// The content type of the file `name`.
    static func of(_ name: String) -> String {
        table[(name as NSString).pathExtension.lowercased()] ?? "application/octet-stream"
    }

    private static let table: [String: String] = [
        // The page.
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "svg": "image/svg+xml",
        "png": "image/png", "ico": "image/x-icon", "json": "application/json",
        // An item's files.
        "mp4": "video/mp4", "m4s": "video/iso.segment", "jpg": "image/jpeg", "jpeg": "image/jpeg",
        "webp": "image/webp", "m3u8": "application/vnd.apple.mpegurl",
    ]
}
