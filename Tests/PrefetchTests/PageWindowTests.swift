import Prefetch
import Testing

@Suite struct PageWindowTests {
    @Test("each named policy's page window: attached to its first-frame reach, posters one card beyond")
    func namedPolicies() throws {
        let expected: [(name: String, window: PageWindow)] = [
            // The default (videofeed serve): the page's window as it was before it was derived.
            ("staged", PageWindow(ahead: 2, behind: 2, posters: 3)),
            ("window", PageWindow(ahead: 2, behind: 2, posters: 3)),
            ("forward0", PageWindow(ahead: 0, behind: 0, posters: 1)),
            ("forward2", PageWindow(ahead: 2, behind: 0, posters: 3)),
            ("forward5", PageWindow(ahead: 5, behind: 0, posters: 6)),
            ("tiktokLike", PageWindow(ahead: 4, behind: 0, posters: 5)),
            // Nothing known of the viewer: +1 is always prepared, +2 and -1 only probed (scores 0.031, 0.019).
            ("swipeAware", PageWindow(ahead: 1, behind: 0, posters: 2)),
        ]
        for (name, window) in expected {
            let policy = try #require(BuiltInPolicies.named(name))
            #expect(PageWindow(policy: policy) == window, "\(name): \(PageWindow(policy: policy))")
        }
        #expect(PageWindow(policy: StagedPolicy()) == .standard)
    }

    @Test("a policy deeper than a page can hold is capped; the posters still reach past the attached cards")
    func capped() throws {
        let deep = try #require(BuiltInPolicies.named("forward64"))
        #expect(PageWindow(policy: deep) == PageWindow(ahead: PageWindow.maxAttached, behind: 0,
                                                       posters: PageWindow.maxAttached + 1))
        #expect(PageWindow(ahead: -3, behind: 99, posters: 0) == PageWindow(ahead: 0, behind: 8, posters: 8))
    }

    @Test("asymmetric windows, and the reach counted the short way round on a wrapping feed")
    func asymmetricAndWrapping() {
        #expect(PageWindow(policy: WindowPolicy(behind: 1, ahead: 3)) == PageWindow(ahead: 3, behind: 1, posters: 4))
        // Current 0 of a wrapping feed of 10: -1 and -2 are items 9 and 8.
        let wrapping = PrefetchContext(current: 0, feedLength: 10, wraps: true)
        #expect(PageWindow(policy: WindowPolicy(behind: 2, ahead: 1), context: wrapping)
                == PageWindow(ahead: 1, behind: 2, posters: 3))
    }

    @Test("a fast scroller's swipe-aware plan is deeper than the representative one (the page keeps the latter)")
    func swipeAwareDependsOnContext() {
        let fast = (0..<8).map { Swipe(time: Double($0) * 0.5, from: $0, to: $0 + 1) }
        let context = PrefetchContext(current: 8, feedLength: 50, history: fast, now: 3.6)
        let window = PageWindow(policy: SwipeAwarePolicy(), context: context)
        #expect(window.ahead >= 3)
        #expect(PageWindow(policy: SwipeAwarePolicy()).ahead == 1)
    }
}
