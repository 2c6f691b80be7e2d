import Foundation

extension RemoteFeedLoader {
    /// The URL of the page at `cursor`; `nil` when the listing has no such page (a one-page shape).
    func pageURL(for cursor: FeedCursor?) throws(FeedError) -> URL? {
        switch (format, cursor) {
        case (.cloudinary, nil):
            return Self.url(url, setting: ["max_results": pageSize.map(String.init)])
        case (.cloudinary, .token(let token)?), (nil, .token(let token)?):
            return Self.url(url, setting: ["max_results": pageSize.map(String.init), "next_cursor": token])
        case (.pexels, nil):
            return Self.url(url, setting: ["per_page": pageSize.map(String.init)])
        case (.pexels, .page(let number)?), (nil, .page(let number)?):
            guard number >= 1 else { throw .invalidCursor(.page(number), reason: "pages count from 1") }
            return Self.url(url, setting: ["page": String(number), "per_page": pageSize.map(String.init)])
        case (.pexels, .token(let next)?):
            guard let nextURL = URL(string: next), Self.isHTTP(nextURL), URLOrigin.same(nextURL, url) else {
                throw .invalidCursor(.token(next), reason: "not a next_page URL on \(url.host ?? "the listing's host")")
            }
            return nextURL
        case (.cloudinary, .page(let number)?):
            throw .invalidCursor(.page(number), reason: "Cloudinary listings page by next_cursor")
        case (.manifest, nil), (.imagefeed, nil), (nil, nil):
            return url
        case (.manifest, _?), (.imagefeed, _?):
            return nil
        }
    }

    /// The cursor of the page after `document`, which was loaded at `cursor`. A page without any entry ends the
    /// listing even if it names a next page, so that a misbehaving server cannot keep a reader paging forever.
    func nextCursor(after document: FeedDocument, at cursor: FeedCursor?) -> FeedCursor? {
        guard !document.items.isEmpty || !document.skipped.isEmpty else { return nil }
        switch document.format {
        case .cloudinary:
            return document.nextCursor.map(FeedCursor.token)
        case .pexels:
            guard let next = document.nextPageURL else { return nil }
            if pexelsPaging == .followNextPage && format == .pexels { return .token(next.absoluteString) }
            if case .page(let requested)? = cursor { return .page((document.page ?? requested) + 1) }
            return .page((document.page ?? 1) + 1)
        case .manifest, .imagefeed:
            return nil
        }
    }

    /// `base` with the given query parameters set (replacing any of the same name); `nil` values leave the
    /// parameter as `base` has it. Values are percent-encoded strictly (a `+` in a cursor becomes `%2B`, since
    /// servers read a bare `+` as a space); the rest of `base`'s query is kept byte for byte.
    static func url(_ base: URL, setting parameters: [String: String?]) -> URL {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: true) else { return base }
        var items = components.percentEncodedQueryItems ?? []
        for (name, value) in parameters.sorted(by: { $0.key < $1.key }) {
            guard let value, let encoded = value.addingPercentEncoding(withAllowedCharacters: unreservedCharacters)
            else { continue }
            items.removeAll { $0.name == name }
            items.append(URLQueryItem(name: name, value: encoded))
        }
        components.percentEncodedQueryItems = items.isEmpty ? nil : items
        return components.url ?? base
    }

    /// RFC 3986 unreserved characters: the only ones left unencoded in a query value we set.
    private static let unreservedCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
