import EngineSupport
import Feed
import Foundation
import Hummingbird
import NIOCore

/// Responses for immutable files (RFC 9110): a strong `ETag`, `Cache-Control: immutable`, `If-None-Match` → 304
/// (weak comparison, a list or `*`), single byte ranges (`Range: bytes=a-b`, `a-`, `-n`) → 206 with
/// `Content-Range`, or 416 when unsatisfiable, and `If-Range`: a range is served only when its validator is this
/// file's ETag (strong comparison); anything else gets the whole file. A header with several ranges gets the whole
/// file (200), as RFC 9110 allows. The body is read from disk as it is sent.
///
/// Not Hummingbird's `FileMiddleware` over a file provider: it serves files that exist (anything else is its 404 or the
/// next responder), where a media file is made on demand with its own answers (410 for a removed item, 404 with
/// `X-Segment-Count` past the end, 422 for an item that cannot be made); and its ETag is made from the file's
/// modification time and size, so the same bytes made again after an eviction, or by a replica with a cache of its
/// own, get another ETag and a client's `If-None-Match` and `If-Range` miss. This one is the cache key's hash and the
/// size, the same wherever and whenever the (deterministic) bytes are made.
enum HTTPRanges {
    /// The ETag of the file at cache key `key` with `count` bytes.
    static func etag(key: String, count: Int) -> String { "\"\(StableHash.short(key))-\(count)\"" }

    /// The answer to `request` for `file`.
    static func response(for request: Request, file: CacheFile, key: String, mime: String, head: Bool,
                         backlog: ConnectionBacklog?) -> Response {
        let count = file.size
        let tag = etag(key: key, count: count)
        var headers: HTTPFields = [
            .contentType: mime,
            .eTag: tag,
            .cacheControl: "public, max-age=31536000, immutable",
            .acceptRanges: "bytes",
        ]
        if let match = request.headers[values: .ifNoneMatch].nonEmpty?.joined(separator: ","),
           noneMatch(match, tag) {
            return Response(status: .notModified, headers: headers)
        }
        var status = HTTPResponse.Status.ok
        var lower = 0, upper = count - 1
        if let range = request.headers[.range], rangeApplies(request.headers[.ifRange], tag) {
            switch parse(range, count: count) {
            case .whole: break
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(count)"
                headers[.contentLength] = "0"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            case .range(let a, let b):
                status = .partialContent
                (lower, upper) = (a, b)
                headers[.contentRange] = "bytes \(a)-\(b)/\(count)"
            }
        }
        headers[.contentLength] = String(max(0, upper - lower + 1))
        if head || upper < lower { return Response(status: status, headers: headers) }
        return Response(status: status, headers: headers, body: file.body(lower, upper, backlog: backlog))
    }

    /// Whether `If-None-Match: header` matches `tag` by weak comparison (RFC 9110 13.1.2): `*`, or any listed tag
    /// equal once a `W/` prefix is dropped from both.
    static func noneMatch(_ header: String, _ tag: String) -> Bool {
        let opaque = weakless(tag)
        return header.split(separator: ",").contains { item in
            let value = item.trimmingCharacters(in: .whitespaces)
            return value == "*" || weakless(value) == opaque
        }
    }

    /// Whether a `Range` is honoured given `If-Range` (RFC 9110 13.1.5): with no `If-Range`, yes; with one, only when
    /// it is exactly this file's strong ETag (a weak tag or a date never matches: no `Last-Modified` is sent).
    static func rangeApplies(_ ifRange: String?, _ tag: String) -> Bool {
        guard let ifRange else { return true }
        return ifRange.trimmingCharacters(in: .whitespaces) == tag
    }

    private static func weakless(_ tag: String) -> Substring {
        tag.hasPrefix("W/") ? tag.dropFirst(2) : tag[...]
    }

    enum Parsed: Equatable {
        case whole
        case unsatisfiable
        /// Inclusive bounds.
        case range(Int, Int)
    }

    /// A `Range` header against a file of `count` bytes.
    static func parse(_ header: String, count: Int) -> Parsed {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = text.dropFirst(6)
        guard !spec.contains(",") else { return .whole }
        let sides = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard sides.count == 2 else { return .whole }
        func number(_ s: String) -> Int? {
            guard !s.isEmpty, s.count <= 18, s.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(s)
        }
        if sides[0].isEmpty {
            guard let suffix = number(sides[1]) else { return .whole }
            guard suffix > 0, count > 0 else { return .unsatisfiable }
            return .range(max(0, count - suffix), count - 1)
        }
        guard let lower = number(sides[0]) else { return .whole }
        guard lower < count else { return .unsatisfiable }
        if sides[1].isEmpty { return .range(lower, count - 1) }
        guard let upper = number(sides[1]) else { return .whole }
        guard upper >= lower else { return .whole }
        return .range(lower, min(upper, count - 1))
    }
}

private extension Array {
    var nonEmpty: Self? { isEmpty ? nil : self }
}
