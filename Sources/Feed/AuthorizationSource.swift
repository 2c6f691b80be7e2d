import Foundation

/// Where the value of the `Authorization` header comes from — never from code.
///
/// The value is the whole header value (`Bearer …` for a token, `Basic …` for Cloudinary's key and secret, the bare
/// key for Pexels). A file is read again for each request, so rotated credentials are picked up; a variable is read
/// from the environment the loader was given. The value is never printed: the `description` names only the variable
/// or the file, and errors do the same.
public enum AuthorizationSource: Sendable, Hashable, CustomStringConvertible {
    /// The value of an environment variable, e.g. `PEXELS_API_KEY`.
    case environment(String)
    /// The contents of a file (surrounding whitespace and the final newline removed).
    case file(URL)

    /// `environment variable PEXELS_API_KEY` or `credentials file /path`: never the value.
    public var description: String {
        switch self {
        case .environment(let name): "environment variable \(name)"
        case .file(let url): "credentials file \(url.path)"
        }
    }

    /// Reads the header value; `environment` stands for the process environment.
    func headerValue(environment: [String: String]) throws(FeedError) -> String {
        let raw: String
        switch self {
        case .environment(let name):
            guard let value = environment[name] else { throw .credentialsUnavailable(reason: "\(self) is not set") }
            raw = value
        case .file(let url):
            // A named pipe would block the read forever: only a regular file is read.
            var info = stat()
            guard stat(url.path, &info) == 0 else {
                throw .credentialsUnavailable(reason: "cannot read \(self): \(String(cString: strerror(errno)))")
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                throw .credentialsUnavailable(reason: "cannot read \(self): not a regular file")
            }
            do {
                raw = try String(contentsOf: url, encoding: .utf8)
            } catch {
                throw .credentialsUnavailable(reason: "cannot read \(self): \(SystemErrorText.reason(error))")
            }
        }
        let value = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !value.isEmpty else { throw .credentialsUnavailable(reason: "\(self) is empty") }
        guard !value.contains(where: { $0 == "\n" || $0 == "\r" }) else {
            throw .credentialsUnavailable(reason: "\(self) holds more than one line")
        }
        return value
    }
}
