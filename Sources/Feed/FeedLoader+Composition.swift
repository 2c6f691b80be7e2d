extension FeedLoader {
    /// This loader with its last good pages kept in `cache` and served when it fails.
    public func cached(in cache: any FeedPageCache) -> CachingFeedLoader {
        CachingFeedLoader(decoratee: self, cache: cache)
    }

    /// This loader, then `fallback` when it fails or its first page is empty; `name` says what the fallback is in
    /// the warning of a page it served.
    public func withFallback(_ fallback: any FeedLoader, named name: String = "the fallback feed") -> FallbackFeedLoader {
        FallbackFeedLoader(primary: self, fallback: fallback, name: name)
    }
}
