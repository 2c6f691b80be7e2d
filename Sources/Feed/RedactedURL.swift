import Foundation

/// A URL as it may appear in messages: without user and password, with the values of query parameters that look
/// secret (`api_key`, `token`, `signature`, …) replaced by `REDACTED`, and without the fragment.
public enum RedactedURL {
    private static let secretNameParts = [
        "key", "token", "secret", "sig", "password", "passwd", "auth", "credential", "session",
    ]

    /// `url` with its credentials and secret-looking query values removed.
    public static func string(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return "<invalid URL>" }
        components.user = nil
        components.password = nil
        components.fragment = nil
        components.queryItems = components.queryItems?.map { item in
            let name = item.name.lowercased()
            guard secretNameParts.contains(where: name.contains), item.value != nil else { return item }
            return URLQueryItem(name: item.name, value: "REDACTED")
        }
        return components.string ?? "<invalid URL>"
    }

    /// Whether `a` and `b` share scheme, host and port, so that credentials meant for one may go to the other.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased()
            && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
    }
}
