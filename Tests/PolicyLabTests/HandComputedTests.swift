import PolicyLab
import Prefetch
import Testing

/// A scenario small enough to follow by hand (the timeline is written out in docs/policylab.md): four 10 s items at
/// 8 fps (frame durations exact in binary), open 10 ms, decoder 20 ms, first frame 40 ms, further frames 20 ms,
/// 1000 bytes a frame; `forward1`, one background worker plus the lane kept for the current item, two cores.
@Suite struct HandComputedTests {
    static let costs = CostProfile(source: "hand", display: "test", items: [
        ItemCosts(name: "hand", openSeconds: 0.01, decoderOpenSeconds: 0.02, firstFrameSeconds: 0.04,
                  frameSeconds: 0.02, bytesPerFrame: 1000, frameRate: 8, duration: 10),
    ])

    static func scenario() -> Scenario {
        let session = SwipeSession(initialWatch: 0.55, steps: [
            .init(action: .next, watch: 0.3),
            .init(action: .next, watch: 0.11),
            .init(action: .jump(0), watch: 0),
        ])
        return Scenario(session: session, feedLength: 4, costs: costs, workers: 1, cores: 2, budget: 1 << 20)
    }

    @Test("every metric of the hand-computed timeline, with and without skipping steady playback",
          arguments: [true, false])
    func handComputed(skipping: Bool) throws {
        var simulator = try PolicySimulator(scenario: Self.scenario())
        simulator.skipsSteadyPlayback = skipping
        let m = simulator.run(ForwardPolicy(count: 1))
        #expect(m.policy == "forward1")
        #expect(m.swipes == 3)
        #expect(m.hits == 2)
        #expect(m.misses == 1)
        // Two hits (0 ms) and the jump back to item 0, released at the first swipe: open + decoder + first frame.
        #expect(m.timeToFirstFrameP50 == 0)
        #expect(abs(m.timeToFirstFrameP95 - 70) < 1e-9)
        #expect(abs(m.timeToFirstFrameP99 - 70) < 1e-9)
        #expect(m.stalls == 0 && m.stallSeconds == 0)
        // Shown: 2 first frames on hits, 1 after the miss, 4 playback frames of item 0 and 2 of item 1.
        #expect(m.framesShown == 9)
        // Decoded: item 0 first + 8 + 1 + 3 refills, item 1 first + 8 + 2 refills, item 2 first + 5 before the
        // jump cancelled its job, item 3 first, item 0 first again.
        #expect(m.framesDecoded == 32)
        #expect(m.wastedFrames == 23)
        #expect(m.wastedBytes == 23_000)
        #expect(m.cancellations == 1)
        // 13 + 1: item 0's job after the jump starts on the background lane and moves to the urgent lane once that
        // is free.
        #expect(m.jobsStarted == 14)
        #expect(m.peakDecodedBytes == 10_000)
        #expect(abs(m.virtualSeconds - 1.10) < 1e-9)
    }
}
