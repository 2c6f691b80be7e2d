import Foundation

/// How the engine names an item, a feed or a request in anything a person or a file may keep — errors, log lines,
/// cards, records: the one redaction, so no module strips less than another.
///
/// A URL keeps its scheme, host, port, path and the names of its parameters; what gives access is replaced:
/// - `user:password@` user info is removed;
/// - the value of a query (or fragment) parameter whose name looks secret becomes `REDACTED`
///   (`…/clip.mp4?X-Amz-Signature=REDACTED&X-Amz-Date=20260101T000000Z`), names compared case-insensitively:
///   signed-URL shapes (AWS SigV4 `X-Amz-Signature`/`X-Amz-Credential`/`X-Amz-Security-Token`, GCS
///   `X-Goog-Signature`/`X-Goog-Credential`, CloudFront `Signature`/`Key-Pair-Id`/`Policy`, Azure SAS `sig`, Cloudinary
///   `api_key`/`api_secret`/`signature`) and generic ones (`token`, `access_token`, `key`, `apikey`, `password`,
///   `secret`, `auth`, …) — see ``isSecretParameter(_:)``;
/// - a Cloudinary URL signature path component (`/s--Ab12Cd34--/`) becomes `s--REDACTED--`: it authorizes that exact
///   derived asset.
///
/// Text that is not a URL (a local path, a public ID) is returned as it is. Redaction works on the text, not on a
/// parsed and re-encoded URL, so what is kept reads exactly as it was given.
public enum Redaction {
    /// What a secret value is replaced with.
    public static let placeholder = "REDACTED"

    /// Parameter names (lowercased) that are secret as a whole but too short or too common to look for inside other
    /// names: Azure SAS `sig`, CloudFront `Policy` and `Key-Pair-Id`, generic `key`, `auth`, `pwd`, `pass`.
    private static let secretNames: Set<String> = [
        "sig", "key", "auth", "policy", "key-pair-id", "pwd", "pass", "code", "jwt", "hmac",
        // Akamai's token authentication: `hdnts` (query string) and `hdnea` (cookie or query).
        "hdnts", "hdnea",
    ]
    /// Parts (lowercased) that make any parameter name containing them secret: `X-Amz-Signature`, `signature`,
    /// `X-Goog-Credential`, `X-Amz-Security-Token`, `access_token`, `api_key`, `apikey`, `api_secret`, `password`, ….
    private static let secretNameParts = [
        "signature", "credential", "token", "secret", "password", "passwd", "apikey", "api_key", "api-key",
        "accesskey", "access_key", "privatekey", "private_key", "session", "authorization",
    ]
    /// Names that contain a secret part but hold none: AWS and GCS list the signed headers by name.
    private static let publicNames: Set<String> = ["x-amz-signedheaders", "x-goog-signedheaders"]

    /// Whether a query parameter named `name` holds a secret (case-insensitive; percent-encoding in the name is
    /// decoded first). Besides the names listed on ``Redaction``, any name ending in `key` after a separator
    /// (`x-api-key`, `subscription_key`) or in `sig` after one (`url-sig`).
    public static func isSecretParameter(_ name: String) -> Bool {
        let name = percentDecoded(name).lowercased()
        if publicNames.contains(name) { return false }
        // `__hdnea__`, `_sig`: the same names with underscores around them.
        if secretNames.contains(name) || secretNames.contains(name.trimmingCharacters(in: CharacterSet(charactersIn: "_"))) {
            return true
        }
        if secretNameParts.contains(where: name.contains) { return true }
        for suffix in ["key", "sig"] {
            for separator in ["-", "_", "."] where name.hasSuffix(separator + suffix) { return true }
        }
        return false
    }

    /// `text` as it may be shown or recorded: each URL in it (a `scheme://` run up to white space or a quote) without
    /// user info and secret values, everything else unchanged. An error message that names a URL is redacted too.
    public static func redacted(_ text: String) -> String {
        guard text.contains("://") else { return text }
        var result = ""
        var rest = text[...]
        while let separator = rest.range(of: "://") {
            var start = separator.lowerBound
            while start > rest.startIndex, isSchemeCharacter(rest[rest.index(before: start)]) {
                start = rest.index(before: start)
            }
            while start < separator.lowerBound, !(rest[start].isASCII && rest[start].isLetter) {
                start = rest.index(after: start)
            }
            let end = rest[separator.upperBound...].firstIndex(where: {
                $0.isWhitespace || $0 == "\"" || $0 == "'" || $0 == "<" || $0 == ">" || $0 == "`"
            }) ?? rest.endIndex
            guard start < separator.lowerBound else {
                result += rest[..<separator.upperBound]
                rest = rest[separator.upperBound...]
                continue
            }
            result += rest[..<start]
            result += redactedURL(String(rest[start..<end]))
            rest = rest[end...]
        }
        return result + rest
    }

    private static func isSchemeCharacter(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "+" || c == "-" || c == ".")
    }

    /// One URL as ``redacted(_:)`` shows it.
    private static func redactedURL(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://"), isScheme(text[..<schemeEnd.lowerBound]) else { return text }
        let afterScheme = text[schemeEnd.upperBound...]
        // The authority ends at the first "/", "?" or "#"; user info is everything before its last "@".
        let authorityEnd = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? afterScheme.endIndex
        var authority = afterScheme[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var rest = afterScheme[authorityEnd...]
        var fragment: Substring?
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        var query: Substring?
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        var result = String(text[..<schemeEnd.upperBound]) + authority + redactedPath(rest)
        if let query { result += "?" + redactedParameters(query) }
        if let fragment { result += "#" + redactedParameters(fragment) }
        return result
    }

    /// `name=value` pairs separated by `&` (or `;`), each value whose name is secret replaced.
    private static func redactedParameters(_ text: Substring) -> String {
        var result = ""
        var pair = Substring()
        func flush() {
            if let equals = pair.firstIndex(of: "="), isSecretParameter(String(pair[..<equals])) {
                result += pair[...equals] + placeholder
            } else {
                result += pair
            }
        }
        var start = text.startIndex
        for index in text.indices where text[index] == "&" || text[index] == ";" {
            pair = text[start..<index]
            flush()
            result.append(text[index])
            start = text.index(after: index)
        }
        pair = text[start...]
        flush()
        return result
    }

    /// The path with each Cloudinary signature component (`s--` 8 or more characters `--`) replaced.
    private static func redactedPath(_ path: Substring) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { component -> Substring in
            guard component.hasPrefix("s--"), component.hasSuffix("--"), component.count >= 3 + 8 + 2 else {
                return component
            }
            let signature = component.dropFirst(3).dropLast(2)
            guard signature.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else { return component }
            return Substring("s--" + placeholder + "--")
        }.joined(separator: "/")
    }

    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.first, first.isASCII, first.isLetter else { return false }
        return text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }

    /// `%XX` escapes decoded; an invalid escape is kept as it is.
    private static func percentDecoded(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
               let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
