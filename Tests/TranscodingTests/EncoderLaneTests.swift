import EngineSupport
import Foundation
@testable import Media
import Testing
@testable import Transcode

/// `EncoderLane`: the transcoder's per-output thread. Its order is what keeps the encoders' bytes the same as on one
/// thread; its failure and abandon paths are what keep a failed or cancelled item from hanging or running on.
@Suite struct EncoderLaneTests {
    struct Boom: Error, Equatable { let at: Int }

    @Test("work runs off the submitting thread, in the order submitted, and is all done when join returns")
    func ordered() throws {
        let lane = EncoderLane(name: "test.lane", capacity: 2)
        let seen = Locked<[Int]>([])
        let submitter = Thread.current
        let offThread = Locked(true)
        for i in 0..<200 {
            try lane.submit {
                if Thread.current == submitter { offThread.set(false) }
                if i % 50 == 0 { Thread.sleep(forTimeInterval: 0.002) }
                seen.withLock { $0.append(i) }
            }
        }
        try lane.join()
        #expect(seen.get() == Array(0..<200))
        #expect(offThread.get())
    }

    @Test("a failure stops the lane: later work is dropped and the failure comes back from the next submit and from join")
    func failure() throws {
        let lane = EncoderLane(name: "test.lane", capacity: 2)
        let ran = Locked<[Int]>([])
        var thrownAtSubmit: (any Error)? = nil
        for i in 0..<100 {
            do {
                try lane.submit {
                    ran.withLock { $0.append(i) }
                    if i == 3 { throw Boom(at: i) }
                }
            } catch {
                thrownAtSubmit = error
                break
            }
        }
        #expect(throws: Boom(at: 3)) { try lane.join() }
        // The submitter learns of it before submitting everything: at most `capacity` pieces wait, and the lane
        // stops taking them once one failed.
        #expect(thrownAtSubmit as? Boom == Boom(at: 3))
        #expect(ran.get() == [0, 1, 2, 3])
    }

    @Test("abandon drops the work still waiting and returns once the running piece ended", .timeLimit(.minutes(1)))
    func abandon() throws {
        let lane = EncoderLane(name: "test.lane", capacity: 8)
        let started = DispatchSemaphore(value: 0)
        let ran = Locked(0)
        let sawAbandon = Locked(false)
        // The running piece ends only once abandon() has begun (an event, not a delay): five pieces then wait, and
        // none of them may run.
        try lane.submit {
            started.signal()
            let deadline = Date().addingTimeInterval(30)
            while !lane.isAbandoned, Date() < deadline { usleep(1000) }
            sawAbandon.set(lane.isAbandoned)
            ran.withLock { $0 += 1 }
        }
        for _ in 0..<5 { try lane.submit { ran.withLock { $0 += 1 } } }
        started.wait()
        lane.abandon()
        #expect(sawAbandon.get(), "the running piece gave up waiting for abandon()")
        #expect(ran.get() == 1)
    }
}
