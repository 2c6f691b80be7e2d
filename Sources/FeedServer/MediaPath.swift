import Foundation
import Media
import Transcode

/// The path of a `/media/` URL taken apart by its fixed shape, or refused: `<folder>/<file>` where the folder is an
/// item's `<public_id path>.<8 hex digits>` and the file one of the names an item has — `poster.jpg`,
/// `preview.mp4|webp`, `master.m3u8`, `<rendition>.mp4` — or `<rendition>/init.mp4|index.m3u8|seg-<k>.m4s`.
///
/// Parsing is linear in the path's length, which is bounded (``maxLength`` bytes, ``maxComponents`` components),
/// and leaves at most two candidate splits for the catalog to look up by hash: a deep or long path costs no more
/// than a short one (trying every prefix, a 24 KB path of `a/` would cost 22 s of CPU).
struct MediaPath {
    /// Longest path accepted after `/media/`, in bytes as sent.
    static let maxLength = 2048
    /// Most components accepted (a public ID's folders, the item folder, a rendition, the file).
    static let maxComponents = 32
    /// Longest component, in bytes once decoded (a file name on Linux).
    static let maxComponentLength = 255

    /// The folder-and-file splits the shape allows, the one-component file first.
    let candidates: [(folder: String, file: String)]

    /// Nil for a path of any other shape: empty, `.` or `..` components, encoded slashes or NULs, too long, too
    /// deep, or no item folder where the file's name says one must be.
    init?(_ raw: Substring) {
        guard !raw.isEmpty, raw.utf8.count <= Self.maxLength else { return nil }
        var parts: [String] = []
        for component in raw.split(separator: "/", omittingEmptySubsequences: false) {
            guard parts.count < Self.maxComponents, let decoded = String(component).removingPercentEncoding,
                  !decoded.isEmpty, decoded.utf8.count <= Self.maxComponentLength, decoded != ".", decoded != "..",
                  !decoded.contains("/"), !decoded.contains("\0") else { return nil }
            parts.append(decoded)
        }
        var candidates: [(String, String)] = []
        let n = parts.count
        if n >= 2, Self.isItemFolder(parts[n - 2]), Self.isItemFile(parts[n - 1]) {
            candidates.append((parts[0..<(n - 1)].joined(separator: "/"), parts[n - 1]))
        }
        if n >= 3, Self.isItemFolder(parts[n - 3]), Self.isRenditionFile(parts[n - 1]) {
            candidates.append((parts[0..<(n - 2)].joined(separator: "/"), parts[n - 2] + "/" + parts[n - 1]))
        }
        guard !candidates.isEmpty else { return nil }
        self.candidates = candidates
    }

    /// `<name>.<8 lowercase hex digits>`, as ``RenditionFolder`` names an item version's folder.
    static func isItemFolder(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        guard utf8.count >= 10, utf8[utf8.count - 9] == UInt8(ascii: ".") else { return false }
        return utf8[(utf8.count - 8)...].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// A file directly in an item's folder that is served (``ItemFile``).
    static func isItemFile(_ name: String) -> Bool {
        ItemFile(path: name)?.isServed == true
    }

    /// A file in a rendition's folder (``ItemFile``, under any rendition name).
    static func isRenditionFile(_ name: String) -> Bool {
        ItemFile(path: "r/" + name) != nil
    }
}
