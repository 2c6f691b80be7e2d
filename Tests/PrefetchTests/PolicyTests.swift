import Prefetch
import Testing

@Suite struct PolicyTests {
    func plan(_ policy: any PrefetchPolicy, current: Int, length: Int = 10, wraps: Bool = false,
              history: [Swipe] = [], now: Double = 0) -> [Int: PrefetchStage] {
        let wanted = policy.wanted(in: PrefetchContext(current: current, feedLength: length, wraps: wraps,
                                                       history: history, now: now))
        #expect(Set(wanted.map(\.index)).count == wanted.count, "one request per index")
        #expect(wanted.max { $0.priority < $1.priority }?.index == current, "current item first")
        return Dictionary(uniqueKeysWithValues: wanted.map { ($0.index, $0.stage) })
    }

    @Test("window(2,2): current buffered 1 s, ±1 and ±2 at first frame, clipped or wrapped at the ends")
    func window() {
        #expect(plan(.window(), current: 5) == [5: .buffered(seconds: 1), 4: .firstFrame, 6: .firstFrame,
                                                3: .firstFrame, 7: .firstFrame])
        #expect(plan(.window(), current: 0) == [0: .buffered(seconds: 1), 1: .firstFrame, 2: .firstFrame])
        #expect(plan(.window(), current: 0, wraps: true) == [0: .buffered(seconds: 1), 1: .firstFrame, 2: .firstFrame,
                                                              9: .firstFrame, 8: .firstFrame])
        #expect(plan(.window(), current: 1, length: 3, wraps: true).count == 3)
    }

    @Test("forward(n): only the next n")
    func forward() {
        #expect(plan(.forward(2), current: 5) == [5: .buffered(seconds: 1), 6: .firstFrame, 7: .firstFrame])
        #expect(plan(.forward(2), current: 9) == [9: .buffered(seconds: 1)])
    }

    @Test("tiktokLike: current plus the next four, none behind")
    func tiktok() {
        #expect(plan(.tiktokLike, current: 3) == [3: .buffered(seconds: 1), 4: .firstFrame, 5: .firstFrame,
                                                  6: .firstFrame, 7: .firstFrame])
    }

    @Test("staged: buffered, first frame and probed by distance")
    func staged() {
        let p = plan(.staged, current: 5)
        #expect(p[5] == .buffered(seconds: 2))
        #expect(p[4] == .buffered(seconds: 1) && p[6] == .buffered(seconds: 1))
        #expect(p[3] == .firstFrame && p[7] == .firstFrame)
        #expect(p[1] == .probed && p[2] == .probed && p[8] == .probed && p[9] == .probed)
        #expect(p[0] == nil)
    }

    @Test("swipeAware: shallow for a patient watcher, deep for a fast scroller, always the next item")
    func swipeAware() {
        // Patient: long dwells, 5 s into the current item.
        let patient = (0..<6).map { Swipe(time: Double($0) * 20, from: $0, to: $0 + 1) }
        let calm = plan(.swipeAware, current: 6, length: 50, history: patient, now: 105)
        #expect(calm[7] == .firstFrame)
        #expect(calm[10] == nil)
        // Fast: a swipe every 0.5 s.
        let fast = (0..<8).map { Swipe(time: Double($0) * 0.5, from: $0, to: $0 + 1) }
        let deep = plan(.swipeAware, current: 8, length: 50, history: fast, now: 3.6)
        #expect(deep[9] == .firstFrame && deep[10] == .firstFrame && deep[11] == .firstFrame)
        #expect(deep.count > calm.count)
        // Near the end of a typical item the viewer is about to leave: the next item is certainly wanted.
        #expect(SwipeAwarePolicy().wanted(in: PrefetchContext(current: 0, feedLength: 5)).contains { $0.index == 1 })
    }

    @Test("policies by name, as the CLI and PolicyLab use them")
    func names() {
        #expect(BuiltInPolicies.named("window")?.name == "window(2,2)")
        #expect(BuiltInPolicies.named("forward3")?.name == "forward3")
        #expect(BuiltInPolicies.named("tiktokLike")?.name == "tiktokLike")
        #expect(BuiltInPolicies.named("nope") == nil)
        #expect(BuiltInPolicies.all.count == 5)
    }
}
