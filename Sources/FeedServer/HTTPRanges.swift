import EngineSupport
import Feed
import Foundation
import Hummingbird
import NIOCore

/// Responses for immutable files: a strong `ETag`, `Cache-Control: immutable`, `If-None-Match` → 304, and single
/// byte ranges (`Range: bytes=a-b`, `a-`, `-n`) → 206 with `Content-Range`, or 416 when unsatisfiable. A header
/// with several ranges gets the whole file (200), as RFC 9110 allows.
enum HTTPRanges {
    /// The ETag of the file at cache key `key` with `count` bytes.
    static func etag(key: String, count: Int) -> String { "\"\(StableHash.short(key))-\(count)\"" }

    /// The answer to `request` for `bytes`.
    static func response(for request: Request, bytes: [UInt8], key: String, mime: String, head: Bool) -> Response {
        let tag = etag(key: key, count: bytes.count)
        var headers: HTTPFields = [
            .contentType: mime,
            .eTag: tag,
            .cacheControl: "public, max-age=31536000, immutable",
            .acceptRanges: "bytes",
        ]
        if let match = request.headers[.ifNoneMatch],
           match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == tag || $0.trimmingCharacters(in: .whitespaces) == "*" }) {
            return Response(status: .notModified, headers: headers)
        }
        var status = HTTPResponse.Status.ok
        var slice = bytes[...]
        if let range = request.headers[.range] {
            switch parse(range, count: bytes.count) {
            case .whole: break
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(bytes.count)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            case .range(let lower, let upper):
                status = .partialContent
                slice = bytes[lower...upper]
                headers[.contentRange] = "bytes \(lower)-\(upper)/\(bytes.count)"
            }
        }
        headers[.contentLength] = String(slice.count)
        if head { return Response(status: status, headers: headers) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: slice)))
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
