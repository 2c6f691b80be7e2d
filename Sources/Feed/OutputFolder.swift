import Foundation

/// An output folder that per-item writes and deletes never leave — not through `..` in an id (``OutputPath``
/// handles that), and not through a symbolic link planted inside the folder (`OUT/lnk -> ../elsewhere`).
///
/// Every write and delete goes through here: ``prepare(_:)`` checks each folder between the output folder and the
/// file, following a symbolic link only when its target resolves inside the output folder, creates what is
/// missing, and returns the file's path in the resolved folder, so the writer itself follows no link; ``remove(_:)``
/// makes the same check and then unlinks the file itself (a symbolic link there is removed, never what it points
/// at). Used by `videofeed thumbs` and `videofeed demo`.
public struct OutputFolder: Sendable {
    /// The output folder as given.
    public let root: URL

    /// An output folder at `root` (created by ``prepare(_:)`` when missing).
    public init(_ root: URL) {
        self.root = root.standardizedFileURL
    }

    /// Why a path in the output folder may not be written or removed.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// The file as asked for, relative to the output folder.
        public var path: String
        /// Why, in words.
        public var reason: String

        /// `lnk/new.jpg: lnk is a symbolic link to /x/elsewhere, outside the output folder; nothing written there`.
        public var description: String { "\(path): \(reason)" }
    }

    /// The file `relative` (a path below the output folder, as from ``OutputPath/relative(for:)`` plus a suffix)
    /// ready to be written: every folder on the way exists and lies inside the output folder. Returns the file's
    /// URL in the resolved folder.
    /// - Throws: ``Refusal`` when a component is `..`, a symbolic link whose target is outside the output folder, or
    ///   a file where a folder is needed; or when a folder cannot be created.
    public func prepare(_ relative: String) throws(Refusal) -> URL {
        // Creating, resolve either returns the folder or throws.
        guard let (folder, name) = try resolve(relative, creating: true) else {
            throw Refusal(path: relative, reason: "the output folder \(root.path) vanished while it was prepared")
        }
        return folder.appendingPathComponent(name)
    }

    /// Removes the folder `relative` (a path below the output folder) and everything in it, after the same checks as
    /// ``prepare(_:)``: no `..`, no symbolic link on the way that leads out. A symbolic link at `relative` itself is
    /// unlinked, never followed; links inside the folder are removed as links. A missing folder is not an error.
    /// - Throws: ``Refusal`` when the path leads outside the output folder or the folder cannot be removed.
    public func removeFolder(_ relative: String) throws(Refusal) {
        guard let (folder, name) = try resolve(relative, creating: false) else { return }
        let target = folder.appendingPathComponent(name)
        var info = stat()
        if lstat(target.path, &info) != 0 { return }
        if (info.st_mode & S_IFMT) != S_IFDIR {
            if unlink(target.path) != 0 && errno != ENOENT {
                throw Refusal(path: relative, reason: "cannot be removed: \(String(cString: strerror(errno)))")
            }
            return
        }
        do {
            try FileManager.default.removeItem(at: target)
        } catch {
            throw Refusal(path: relative, reason: "cannot be removed: \(SystemErrorText.reason(error))")
        }
    }

    /// Removes the file `relative` (a path below the output folder) after the same checks as ``prepare(_:)``,
    /// without following a symbolic link at the file itself. A missing file is not an error.
    /// - Throws: ``Refusal`` when the path leads outside the output folder or the file cannot be removed.
    public func remove(_ relative: String) throws(Refusal) {
        // A folder on the way is missing: so is the file.
        guard let (folder, name) = try resolve(relative, creating: false) else { return }
        let target = folder.appendingPathComponent(name).path
        var info = stat()
        if lstat(target, &info) != 0 { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            throw Refusal(path: relative, reason: "is a folder, not an output file; left alone")
        }
        if unlink(target) != 0 && errno != ENOENT {
            throw Refusal(path: relative, reason: "cannot be removed: \(String(cString: strerror(errno)))")
        }
    }

    /// Whether the file `relative` exists inside the output folder (reached without leaving it).
    public func contains(_ relative: String) -> Bool {
        // `try?` flattens: nil for a refusal and for a missing folder alike.
        guard let (folder, name) = try? resolve(relative, creating: false) else { return false }
        var info = stat()
        return lstat(folder.appendingPathComponent(name).path, &info) == 0
    }

    /// The real folder holding `relative`'s last component, and that component; nil when, not `creating`, a folder
    /// on the way (or the output folder) does not exist.
    private func resolve(_ relative: String, creating: Bool) throws(Refusal) -> (URL, String)? {
        var parts = relative.split(separator: "/").map(String.init)
        guard let name = parts.popLast(), !parts.contains(where: { $0 == ".." || $0 == "." }),
              name != ".." && name != "." else {
            throw Refusal(path: relative, reason: "is not a plain path below the output folder")
        }
        if creating {
            do {
                try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            } catch {
                throw Refusal(path: relative, reason: "cannot create the output folder \(root.path): "
                              + SystemErrorText.reason(error))
            }
        }
        guard let realRoot = Self.realPath(root.path) else {
            if creating { throw Refusal(path: relative, reason: "the output folder \(root.path) cannot be resolved") }
            return nil
        }
        var current = realRoot
        for (i, part) in parts.enumerated() {
            let next = current + "/" + part
            let shown = parts[0...i].joined(separator: "/")
            var info = stat()
            if lstat(next, &info) != 0 {
                guard creating else { return nil }
                if mkdir(next, 0o777) != 0 && errno != EEXIST {
                    throw Refusal(path: relative, reason: "cannot create the folder \(shown): "
                                  + String(cString: strerror(errno)))
                }
                guard lstat(next, &info) == 0 else {
                    throw Refusal(path: relative, reason: "the folder \(shown) vanished while it was created")
                }
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                current = next
            case S_IFLNK:
                guard let target = Self.realPath(next) else {
                    throw Refusal(path: relative, reason: "\(shown) is a symbolic link to nothing; nothing written there")
                }
                guard target == realRoot || target.hasPrefix(realRoot + "/") else {
                    throw Refusal(path: relative, reason: "\(shown) is a symbolic link to \(target), outside the "
                                  + "output folder; nothing is written or removed through it")
                }
                var resolved = stat()
                guard stat(target, &resolved) == 0, (resolved.st_mode & S_IFMT) == S_IFDIR else {
                    throw Refusal(path: relative, reason: "\(shown) is a link to a file where a folder is needed")
                }
                current = target
            default:
                throw Refusal(path: relative, reason: "\(shown) is a file where a folder is needed")
            }
        }
        return (URL(fileURLWithPath: current, isDirectory: true), name)
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
