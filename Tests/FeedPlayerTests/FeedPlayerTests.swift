import Feed
import FeedPlayer
import Foundation
import Media
import Prefetch
import TestSupport
import Testing
import EngineSupport

func item(_ path: String, _ n: Int) -> FeedItem {
    FeedItem(publicID: "item\(n)", createdAt: Date(timeIntervalSince1970: Double(n)), source: URL(fileURLWithPath: path))
}

/// A feed of real fixtures; `corrupt` puts the truncated mp4 at those positions.
func fixtureFeed(count: Int, corrupt: Set<Int> = []) -> [FeedItem] {
    let names = ["hevc.mp4", "vp9.webm", "h264_portrait.mp4", "rotate90.mp4", "mpeg4.avi", "av1.mp4", "vfr.mp4"]
    return (0..<count).map { i in
        item(corrupt.contains(i) ? TestFixtures.bad("truncated.mp4") : TestFixtures.media(names[i % names.count]), i)
    }
}

func smallConfiguration(budget: Int = 64 * 1024 * 1024) -> FeedPlayerConfiguration {
    var c = FeedPlayerConfiguration()
    c.displaySize = Size(width: 180, height: 320)
    c.pixelFormat = .bgra
    c.workers = 2
    c.memoryBudget = budget
    return c
}

@Suite struct FeedPlayerTests {
    @Test("after the window settles, neighbours are hits with their upright first frame")
    func hitsAfterSettle() throws {
        let player = FeedPlayer(feed: fixtureFeed(count: 8), configuration: smallConfiguration())
        player.start(at: 2)
        #expect(player.settle(timeout: 30))
        #expect(player.windowIndexes == [0, 1, 2, 3, 4])
        let frame = try #require(player.next().frame)  // 3: rotate90.mp4, upright 240x320 fitted into 180x320
        #expect(frame.index == 3)
        #expect(frame.image.size == Size(width: 180, height: 240))
        let topLeft = frame.image.pixel(x: 8, y: 8)  // BGRA: red marker top-left
        #expect(topLeft[topLeft.startIndex + 2] > 200 && topLeft[topLeft.startIndex] < 60)
        let metrics = player.metrics
        #expect(metrics.swipes == 1 && metrics.hits == 1 && metrics.misses == 0)
        #expect(metrics.peakDecodedBytes <= metrics.memoryBudget)
    }

    @Test("a cold jump is a miss, then the first frame arrives with an event")
    func missThenArrival() throws {
        let player = FeedPlayer(feed: fixtureFeed(count: 20), configuration: smallConfiguration())
        let events = Locked<[String]>([])
        player.onEvent { event in
            switch event {
            case .miss(let i): events.withLock { $0.append("miss \(i)") }
            case .firstFrameArrived(let i, _): events.withLock { $0.append("arrived \(i)") }
            case .hit(let i, _): events.withLock { $0.append("hit \(i)") }
            default: break
            }
        }
        player.start(at: 0)
        #expect(player.settle(timeout: 30))
        let moved = player.move(to: 15)
        guard case .loading = moved else {
            Issue.record("a cold item cannot be ready: \(moved), window \(player.windowIndexes)")
            return
        }
        let arrived = player.waitForFirstFrame(of: 15, timeout: 30)
        #expect(arrived.frame?.index == 15)
        #expect(player.settle(timeout: 30))
        let seen = events.withLock { $0 }
        #expect(seen.starts(with: ["miss 15", "arrived 15"]), "\(seen)")
        let m = player.metrics
        #expect(m.misses == 1 && m.hits == 0 && m.swipes == 1, "\(m)")
        #expect(m.timeToFirstFrameP50 > 0, "\(m)")
    }

    @Test("a corrupt item in the window fails alone and does not hold up its neighbours")
    func corruptNeighbour() throws {
        let player = FeedPlayer(feed: fixtureFeed(count: 6, corrupt: [1]), configuration: smallConfiguration())
        player.start(at: 0)
        #expect(player.waitForFirstFrame(of: 2, timeout: 30).frame != nil)
        #expect(player.settle(timeout: 30))
        guard case .failed(let message) = player.next() else {
            Issue.record("the corrupt item must be failed")
            return
        }
        #expect(message.contains("truncated.mp4"))
        #expect(player.next().frame?.index == 2, "the item after it is a hit")
        #expect(player.metrics.failures == 1)
        #expect(player.metrics.hits + player.metrics.misses == player.metrics.swipes)
    }

    @Test("swiping faster than decoding never exceeds the memory budget")
    func budget() throws {
        let frameBytes = 180 * 320 * 4
        let budget = 4 * frameBytes
        let player = FeedPlayer(feed: fixtureFeed(count: 40), configuration: smallConfiguration(budget: budget))
        player.start(at: 0)
        for _ in 0..<39 { player.next() }
        for _ in 0..<20 { player.previous() }
        #expect(player.settle(timeout: 30))
        let m = player.metrics
        #expect(m.peakDecodedBytes <= budget)
        #expect(player.decodedBytes <= budget)
        #expect(m.cancellations > 0)
        #expect(m.hits + m.misses == m.swipes)
    }

    @Test("the pull API gives the first frame, then consecutive frames, looping at the end")
    func pull() throws {
        var configuration = smallConfiguration()
        configuration.workers = 1
        let player = FeedPlayer(feed: [item(TestFixtures.media("hevc.mp4"), 0)], policy: .forward(0),
                                configuration: configuration)
        player.start(at: 0)
        var times: [Double] = []
        var loops: [Int] = []
        while times.count < 40, let frame = player.nextPlaybackFrame(waitingUpTo: 30) {
            times.append(frame.time)
            loops.append(frame.loop)
        }
        #expect(times.count == 40)
        let expected: [Double] = (0..<25).map { Double($0) * 0.04 }
        let firstLoop = Array(times.prefix(25))
        #expect(zip(firstLoop, expected).allSatisfy { abs($0 - $1) < 1e-6 })
        #expect(times[25] == 0 && loops[25] == 1, "loops back to the start")
    }

    @Test("at any budget, even one that starves the item on screen, every item plays every frame once, in order",
          arguments: [6 * 97_200, 64 * 1024 * 1024])
    func everyFrameInOrder(budget: Int) throws {
        // hevc.mp4: 25 frames at 25 fps, 320x240 fitted into 180x320 = 180x135 BGRA, 97,200 bytes a frame. The small
        // budget holds the window's five first frames and one more.
        let player = FeedPlayer(feed: (0..<6).map { item(TestFixtures.media("hevc.mp4"), $0) },
                                configuration: smallConfiguration(budget: budget))
        player.start(at: 0)
        for index in 0..<4 {
            if index > 0 { _ = player.next() }
            #expect(player.waitForFirstFrame(of: index, timeout: 30).frame != nil)
            var frames: [(time: Double, loop: Int)] = []
            while frames.count < 30, let frame = player.nextPlaybackFrame(waitingUpTo: 30) {
                #expect(frame.index == index)
                frames.append((frame.time, frame.loop))
            }
            let expected = (0..<30).map { (Double($0 % 25) * 0.04, $0 / 25) }
            #expect(frames.count == 30)
            #expect(zip(frames, expected).allSatisfy { abs($0.time - $1.0) < 1e-6 && $0.loop == $1.1 },
                    "budget \(budget), item \(index): \(frames.map { "\($0.loop):\($0.time)" })")
        }
        #expect(player.metrics.peakDecodedBytes <= budget)
    }

    @Test("stills and cover pictures are held, not re-decoded at the container's tick rate",
          arguments: ["image.jpg", "image.png", "cover.mp3"])
    func stills(name: String) throws {
        let player = FeedPlayer(feed: [item(TestFixtures.media(name), 0)], policy: .forward(0),
                                configuration: smallConfiguration())
        player.start(at: 0)
        var frames: [PlayerFrame] = []
        while frames.count < 3, let frame = player.nextPlaybackFrame(waitingUpTo: 30) { frames.append(frame) }
        #expect(frames.count == 3)
        #expect(frames.allSatisfy { $0.duration >= 1 }, "\(frames.map(\.duration))")
        #expect(Set(frames.map(\.image.bytes)).count == 1, "the same picture each loop")
        #expect(frames.map(\.loop) == [0, 1, 2])
    }

    @Test("play() hands frames to the sink in order and a swipe stops it")
    func play() throws {
        let player = FeedPlayer(feed: fixtureFeed(count: 3), configuration: smallConfiguration())
        player.start(at: 0)
        #expect(player.waitForFirstFrame(of: 0, timeout: 30).frame != nil)
        let seen = Locked<[Double]>([])
        let shown = ChangeSignal()
        let session = player.play(speed: 8) { frame in
            seen.withLock { $0.append(frame.time) }
            shown.notify()
        }
        #expect(shown.wait(timeout: 30) { seen.withLock { $0.count } > 5 })
        player.next()
        #expect(session.wait(timeout: 5))
        let times = seen.withLock { $0 }
        #expect(times.count > 5)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 || $1 == 0 })
        #expect(session.framesPlayed == times.count)
    }

    @Test("playback faster than decoding stalls: stall events, counted in the metrics")
    func stalls() throws {
        let player = FeedPlayer(feed: fixtureFeed(count: 3), configuration: smallConfiguration())
        let stalled = Locked<[Int]>([])
        let stalling = ChangeSignal()
        player.onEvent { event in
            if case .stall(let index) = event {
                stalled.withLock { $0.append(index) }
                stalling.notify()
            }
        }
        player.start(at: 0)
        #expect(player.waitForFirstFrame(of: 0, timeout: 30).frame != nil)
        // 500× real time: a frame falls due every 0.08 ms, far faster than any frame decodes.
        let session = player.play(speed: 500) { _ in }
        #expect(stalling.wait(timeout: 30) { !stalled.withLock { $0 }.isEmpty })
        session.stop()
        #expect(session.wait(timeout: 5))
        #expect(player.metrics.stalls > 0)
        let seen = stalled.withLock { $0 }
        #expect(!seen.isEmpty && seen.allSatisfy { $0 == 0 }, "\(seen)")
    }

    @Test("events are also an AsyncStream")
    func stream() async throws {
        let player = FeedPlayer(feed: fixtureFeed(count: 4), configuration: smallConfiguration())
        let events = player.events()
        player.start(at: 0)
        var sawFirstFrame = false
        for await event in events {
            if case .slot(.reached(_, .firstFrame)) = event {
                sawFirstFrame = true
                break
            }
        }
        #expect(sawFirstFrame)
    }
}

/// A move to a prefetched neighbour is a hit: its frame comes back from `next()` itself. How fast is measured by the
/// FeedPlayerSwipe benchmark, not here.
@Suite struct FeedPlayerHitTests {
    @Test("moving to a settled neighbour returns its frame at once: a hit, every time")
    func hits() throws {
        var configuration = smallConfiguration()
        configuration.displaySize = Size(width: 720, height: 1280)
        let player = FeedPlayer(feed: fixtureFeed(count: 12), configuration: configuration)
        player.start(at: 2)
        for _ in 0..<6 {
            #expect(player.settle(timeout: 30))
            #expect(player.next().frame != nil, "a settled neighbour is a hit")
        }
        #expect(player.metrics.hits == 6)
    }
}
