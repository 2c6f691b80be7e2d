import Foundation

/// The origin (scheme, host, port) of a URL: credentials meant for one origin go to no other.
enum URLOrigin {
    /// Whether `a` and `b` share scheme, host and port, so that credentials meant for one may go to the other.
    static func same(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased()
            && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
    }
}
