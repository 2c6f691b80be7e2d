import Foundation

/// Writes files so that no reader ever sees a half-written one.
public enum AtomicFile {
    /// Writes `bytes` to a temporary file next to `path`, then renames it over `path`. On failure the temporary
    /// file is removed and nothing appears at `path`.
    /// - Throws: ``MediaError`` `io` (or `permissionDenied`, `fileNotFound` for a missing folder) naming `path`.
    public static func write(_ bytes: [UInt8], to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent()
        let temp = folder.appendingPathComponent(".\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        do {
            try Data(bytes).write(to: temp)
        } catch {
            try? FileManager.default.removeItem(at: temp)
            throw MediaError(Self.kind(of: error), operation: "write", item: path, message: error.localizedDescription)
        }
        if rename(temp.path, url.path) != 0 {
            let message = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temp)
            throw MediaError(.io, operation: "write", item: path, message: message)
        }
    }

    private static func kind(of error: Error) -> MediaError.Kind {
        let ns = error as NSError
        if ns.domain == NSCocoaErrorDomain {
            if ns.code == NSFileNoSuchFileError { return .fileNotFound }
            if ns.code == NSFileWriteNoPermissionError { return .permissionDenied }
        }
        return .io
    }
}
