import Foundation

/// Turns the URL text of an entry into an absolute item ``FeedItem/source``.
///
/// A relative reference resolves against the document's base: for a local manifest the folder that holds the
/// manifest file, for a downloaded listing the URL it was downloaded from. A listing downloaded over HTTP may not
/// point at local files.
struct SourceResolver: Sendable {
    /// The folder of a local document (a directory `file:` URL) or the URL of a remote one; `nil` when unknown.
    let base: URL?

    private var baseIsRemote: Bool {
        guard let scheme = base?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    func resolve(_ text: String, field: String) throws(EntryProblem) -> URL {
        if Self.hasScheme(text) {
            guard let url = URL(string: text), FeedItem.isSupportedSource(url) else {
                throw EntryProblem(reason: "\"\(field)\" \"\(text)\" is not a file or http(s) URL")
            }
            if url.isFileURL && baseIsRemote {
                throw EntryProblem(reason: "\"\(field)\" \"\(text)\" points at a local file from a remote listing")
            }
            return url
        }
        guard let base else {
            throw EntryProblem(reason: "\"\(field)\" \"\(text)\" is relative and the document has no location")
        }
        if base.isFileURL {
            return URL(fileURLWithPath: text, relativeTo: base).absoluteURL.standardizedFileURL
        }
        guard let url = URL(string: text, relativeTo: base)?.absoluteURL, FeedItem.isSupportedSource(url) else {
            throw EntryProblem(reason: "\"\(field)\" \"\(text)\" is not a valid URL reference")
        }
        return url
    }

    /// `true` when `text` starts with a URL scheme such as `https:` or `file:`.
    static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return false }
        let scheme = text[..<colon]
        guard let first = scheme.first, first.isASCII, first.isLetter else { return false }
        return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }
}
