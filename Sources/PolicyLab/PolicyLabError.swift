/// What goes wrong with PolicyLab's inputs, each naming the item (file, option or policy) and saying what is wrong.
public enum PolicyLabError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A trace or profile file that cannot be read.
    case unreadableFile(path: String, reason: String)
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
