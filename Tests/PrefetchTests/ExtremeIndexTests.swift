import Prefetch
import Testing

/// Indices from outside (a client's WebSocket message, a trace) can be anything an `Int` holds: no policy, context or
/// swipe traps on them (issue 33: `{"type":"at","index":4700000000000000000}` crashed `serve`).
@Suite struct ExtremeIndexTests {
    static let extremes = [Int.max, Int.max - 1, 4_700_000_000_000_000_000, Int.min, Int.min + 1, -1, 0]

    @Test func contextOffsetsNeverOverflow() {
        for current in Self.extremes {
            for length in [1, 7, Int.max, Int.max / 2 + 2, 4_700_000_000_000_000_001] {
                for offset in [-2, -1, 0, 1, 2, Int.max, Int.min] {
                    let wrapped = PrefetchContext(current: current, feedLength: length, wraps: true)
                    let i = wrapped.index(offset: offset)
                    #expect(i != nil && i! >= 0 && i! < length)
                    let clipped = PrefetchContext(current: current, feedLength: length, wraps: false)
                    if let j = clipped.index(offset: offset) { #expect(j >= 0 && j < length) }
                }
            }
        }
        // Exact where it matters: the last item's neighbours wrap to the start.
        let last = PrefetchContext(current: Int.max - 1, feedLength: Int.max, wraps: true)
        #expect(last.index(offset: 1) == 0 && last.index(offset: 2) == 1 && last.index(offset: -1) == Int.max - 2)
        let end = PrefetchContext(current: Int.max - 1, feedLength: Int.max, wraps: false)
        #expect(end.index(offset: 1) == nil && end.index(offset: -1) == Int.max - 2)
    }

    @Test func everyPolicyPlansAroundAnyIndex() {
        for policy in BuiltInPolicies.all {
            for current in Self.extremes where current >= 0 {
                for wraps in [true, false] {
                    let context = PrefetchContext(current: current, feedLength: current == Int.max ? Int.max : current + 1,
                                                  wraps: wraps, history: [Swipe(time: 0, from: 0, to: current)], now: 1)
                    for request in policy.wanted(in: context) {
                        #expect(request.index >= 0 && request.index < context.feedLength)
                    }
                }
            }
        }
    }

    @Test func swipesNeverOverflow() {
        for length in [1, 5, Int.max] {
            for wraps in [true, false] {
                for current in Self.extremes {
                    for action in [SwipeAction.next, .previous, .jump(Int.max), .jump(Int.min)] {
                        let target = action.target(from: current, length: length, wraps: wraps)
                        #expect(target >= 0 && target < length)
                    }
                }
            }
        }
        #expect(SwipeAction.next.target(from: Int.max - 1, length: Int.max, wraps: true) == 0)
        #expect(SwipeAction.jump(Int.min).target(from: 0, length: 10, wraps: false) == 0)
    }
}
