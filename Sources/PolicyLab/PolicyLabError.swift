import Foundation

/// What goes wrong with PolicyLab's inputs, each naming the item (file, option or policy) and saying what is wrong.
public enum PolicyLabError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A trace or profile file that cannot be read.
    case unreadableFile(path: String, reason: String)
    /// A file PolicyLab writes (a serve cost profile) that cannot be written; nothing was left in its place.
    case unwritableFile(path: String, reason: String)
    /// A trace line that cannot be understood; `line` counts from 1.
    case malformedTrace(path: String, line: Int, reason: String)
    /// A trace with no swipe in it.
    case emptyTrace(path: String)
    /// A cost profile that is not valid JSON of the expected shape, or holds impossible values.
    case malformedProfile(path: String, reason: String)
    /// A bandwidth trace line that cannot be understood.
    case malformedBandwidthTrace(path: String, line: Int, reason: String)
    /// An option or model parameter with a bad value.
    case invalidParameter(name: String, reason: String)
    /// A policy name the Prefetch module does not know.
    case unknownPolicy(String)

    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason): "\(path): cannot read: \(reason)"
        case .unwritableFile(let path, let reason): "\(path): cannot write: \(reason)"
        case .malformedTrace(let path, let line, let reason): "\(path):\(line): malformed trace line: \(reason)"
        case .emptyTrace(let path): "\(path): the trace holds no swipe"
        case .malformedProfile(let path, let reason): "\(path): malformed cost profile: \(reason)"
        case .malformedBandwidthTrace(let path, let line, let reason):
            "\(path):\(line): malformed bandwidth trace line: \(reason)"
        case .invalidParameter(let name, let reason): "\(name): \(reason)"
        case .unknownPolicy(let name):
            "unknown policy '\(name)' (built in: window, forwardN e.g. forward2, tiktokLike, staged, swipeAware)"
        }
    }
}

/// Reads PolicyLab's input files (traces, cost profiles, bandwidth traces) with a cause a person can act on.
enum InputFile {
    /// The bytes of the regular file at `path`, at most 256 MiB.
    /// - Throws: ``PolicyLabError/unreadableFile(path:reason:)`` naming the cause: missing, not a regular file (a
    ///   named pipe would block the read forever, a device never ends), too large, or the system's error.
    static func contents(of path: String) throws -> Data {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw PolicyLabError.unreadableFile(path: path, reason: String(cString: strerror(errno)))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw PolicyLabError.unreadableFile(path: path, reason: "not a regular file (a folder, named pipe or device)")
        }
        guard info.st_size <= 256 << 20 else {
            throw PolicyLabError.unreadableFile(path: path, reason: "larger than 256 MiB")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw PolicyLabError.unreadableFile(path: path, reason: String(cString: strerror(errno)))
        }
        defer { try? handle.close() }
        do {
            return try handle.readToEnd() ?? Data()
        } catch {
            throw PolicyLabError.unreadableFile(path: path, reason: String(cString: strerror(EIO)))
        }
    }
}
