/// The cards a web page keeps around the one on screen, derived from the server's ``PrefetchPolicy`` so that one
/// policy governs both the server's work ahead and the page (`videofeed serve --policy`).
///
/// The page attaches a card (a MediaSource with its init appended and its first segment held, so a swipe to it plays
/// at once) for every offset from `-behind` to `ahead`, and loads the poster of every card within `posters` on either
/// side; every card further away is freed.
///
/// The mapping (``init(policy:context:)``), on a ``representativeContext``:
///
/// - `ahead` / `behind`: the farthest offsets the policy prepares to ``PrefetchStage/firstFrame`` or beyond. On the
///   server those items have their poster and the viewer's rendition's first segment made ahead: exactly what an
///   attached card fetches. At most ``maxAttached`` on each side.
/// - `posters`: one card beyond the farther attached side, on both sides (`max(ahead, behind) + 1`). Items the policy
///   only probes do not count: the server makes their manifest but not their poster, and a poster the page asked for
///   would be made on demand, ahead of the neighbours' first segments (a request that waits for bytes outranks all
///   prefetch work).
///
/// The default policy (``StagedPolicy``) gives `2, 2, 3` (``standard``), the page's window before it was derived.
public struct PageWindow: Sendable, Hashable, CustomStringConvertible {
    /// Cards attached after the current one.
    public var ahead: Int
    /// Cards attached before the current one.
    public var behind: Int
    /// Cards whose poster is loaded on each side of the current one (at least the attached ones).
    public var posters: Int

    /// Cards attached on one side at most: each is a media element with a decoder and a MediaSource, and browsers
    /// play a few dozen at most at once (Chrome on Android: 40 in a page).
    public static let maxAttached = 8

    /// The page's window until the server says one, and what the default policy gives: ±2 attached, ±3 posters.
    public static let standard = PageWindow(ahead: 2, behind: 2, posters: 3)

    /// A window of `ahead` and `behind` attached cards (clamped to 0…``maxAttached``) and posters on `posters` cards
    /// each side (at least as many as are attached).
    public init(ahead: Int, behind: Int, posters: Int) {
        self.ahead = min(max(0, ahead), Self.maxAttached)
        self.behind = min(max(0, behind), Self.maxAttached)
        self.posters = max(posters, self.ahead, self.behind)
    }

    /// The context a policy's window is read on: the viewer just arrived (no time spent on the item) at an item far
    /// from both ends of a long feed that does not wrap, with no swipe history. A policy whose plan depends on the
    /// history (``SwipeAwarePolicy``) gives the window of a viewer it knows nothing about yet: the page's window is
    /// one for the whole session, while the server's plan follows each viewer.
    public static let representativeContext = PrefetchContext(current: 10_000, feedLength: 20_001, wraps: false,
                                                              history: [], now: 0)

    /// The window `policy` asks of a page: its plan on `context` (items past an end of the feed are not counted; on a
    /// wrapping feed, offsets the short way round) read as described on the type.
    public init(policy: any PrefetchPolicy, context: PrefetchContext = PageWindow.representativeContext) {
        var ahead = 0, behind = 0
        for request in policy.wanted(in: context) where request.stage >= .firstFrame {
            var offset = request.index - context.current
            // On a wrapping feed, the short way round.
            let n = context.feedLength
            if context.wraps, n > 0 {
                offset = ((offset % n) + n) % n
                if offset > n / 2 { offset -= n }
            }
            if offset > 0 { ahead = max(ahead, offset) } else if offset < 0 { behind = max(behind, -offset) }
        }
        let attached = PageWindow(ahead: ahead, behind: behind, posters: 0)
        self.init(ahead: attached.ahead, behind: attached.behind,
                  posters: max(attached.ahead, attached.behind) + 1)
    }

    /// `+2/-2 posters ±3`.
    public var description: String { "+\(ahead)/-\(behind) posters ±\(posters)" }
}
