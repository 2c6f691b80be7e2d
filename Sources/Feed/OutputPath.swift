import Foundation

/// Maps a `public_id` to a relative output path that can never leave the output folder.
///
/// Folders are kept (`travel/lisbon/tram`), but empty, `.` and `..` components are dropped, so no absolute path or
/// parent reference survives; control characters and backslashes become `_`; a component starting with `.` gets a
/// `_` in front (no hidden files, no clash with temporary files); components are cut to 100 bytes and the path to
/// its last 9 components. When anything had to change, `~` and 8 hex digits of the id's stable hash are appended,
/// so two hostile ids that sanitise alike still get different files.
public enum OutputPath {
    /// The relative path (without extension) for `publicID`.
    public static func relative(for publicID: String) -> String {
        var changed = false
        var parts: [String] = []
        for raw in publicID.split(separator: "/", omittingEmptySubsequences: false) {
            if raw.isEmpty || raw == "." || raw == ".." {
                changed = true
                continue
            }
            var part = String(String.UnicodeScalarView(raw.unicodeScalars.map { scalar in
                let control = scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value)
                if control || scalar == "\\" {
                    changed = true
                    return "_"
                }
                return scalar
            }))
            if part.hasPrefix(".") {
                part = "_" + part
                changed = true
            }
            if part.utf8.count > 100 {
                part = truncate(part, bytes: 100)
                changed = true
            }
            parts.append(part)
        }
        if parts.count > 9 {
            parts = Array(parts.suffix(9))
            changed = true
        }
        if parts.isEmpty {
            return "_~" + StableHash.short(publicID)
        }
        if changed { parts[parts.count - 1] += "~" + StableHash.short(publicID) }
        return parts.joined(separator: "/")
    }

    /// The absolute file URL in `root` for `publicID` with a suffix such as `.jpg` or `.2.jpg`.
    /// - Precondition: the result lies inside `root` (guaranteed by ``relative(for:)``; checked anyway).
    public static func file(for publicID: String, suffix: String, in root: URL) -> URL {
        let url = root.appendingPathComponent(relative(for: publicID) + suffix).standardizedFileURL
        precondition(url.path.hasPrefix(root.standardizedFileURL.path + "/"), "output path escapes the output folder")
        return url
    }

    private static func truncate(_ text: String, bytes: Int) -> String {
        var out = ""
        var count = 0
        for ch in text {
            let n = String(ch).utf8.count
            if count + n > bytes { break }
            out.append(ch)
            count += n
        }
        return out
    }
}
