import Foundation
@testable import PolicyLab
import Prefetch
import Testing

/// `videofeed simulate serve`'s model: hand-computed cold starts (the card waits for the manifest, CPU shared by
/// the lanes), hits once the neighbours are made, determinism, and the viewer trace format.
@Suite struct ServeSimulationTests {
    static func item(_ n: Int, manifest: Double = 1, poster: Double = 0.1, segment: Double = 0.5) -> ServedItem {
        ServedItem(name: "item\(n)", renditions: [.init(name: "540x960", width: 540, height: 960)],
                   segmentStarts: [0, 1, 3], duration: 5, manifest: .init(wall: manifest, cpu: manifest),
                   poster: .init(wall: poster, cpu: poster), firstSegment: .init(wall: segment, cpu: segment),
                   segment: .init(wall: segment, cpu: segment))
    }

    static func run(items: Int = 3, cores: Double = 2, workers: Int = 2, _ moves: [ViewerTrace.Move]) -> ServeSimulation.Result {
        let configuration = ServeSimulation.Configuration(workers: workers, cores: cores, requestSeconds: 0.002, tail: 5)
        return ServeSimulation(items: (0..<items).map { item($0) }, policy: WindowPolicy(), configuration: configuration)
            .run(ViewerTrace(moves: moves))
    }

    /// A viewer arriving at a cold server: its card is pending, the fill waits for the manifest job (1 s on its own
    /// core; the poster runs beside it, and the neighbours' work waits for the item's first look), then init and
    /// first segment come from the cache: 1 s plus three requests' 2 ms.
    @Test func aColdArrivalWaitsForTheManifest() {
        let result = Self.run([.init(viewer: 0, time: 0, index: 0)])
        #expect(result.moves == 1)
        #expect(result.hitRate == 0)
        #expect(abs(result.firstFrameMs.p50 - 1004) < 0.01)
        #expect(abs(result.cardMs.p50 - 1002) < 0.01)
        #expect(abs(result.posterMs.p50 - 102) < 0.01)
    }

    /// On one core the poster and the manifest share it: the poster ends at 0.2 s, the manifest at 1.1 s.
    @Test func lanesShareTheCores() {
        let result = Self.run(cores: 1, [.init(viewer: 0, time: 0, index: 0)])
        #expect(abs(result.posterMs.p50 - 202) < 0.01)
        #expect(abs(result.firstFrameMs.p50 - 1104) < 0.01)
    }

    /// Once the server has made the neighbours ahead (the policy's window), a swipe to one is a hit, and a viewer
    /// that held its init and first segment sees it at once (0 ms).
    @Test func aSwipeToAPreparedNeighbourIsAHit() {
        let result = Self.run(items: 6, [.init(viewer: 0, time: 0, index: 0), .init(viewer: 0, time: 10, index: 1)])
        #expect(result.moves == 2)
        #expect(result.hitRate == 0.5)
        #expect(result.firstFrameMsHit.count == 1)
        #expect(result.firstFrameMsHit.p50 == 0)
        #expect(result.stalls == 0)
    }

    /// The same trace gives the same figures, and a drawn trace is the same for the same seed.
    @Test func runsAreDeterministic() {
        let trace = ViewerTrace.generate(viewers: 6, items: 8, seconds: 60, dwell: 0.5...3, jump: 0.33, arrival: 5, seed: 7)
        #expect(trace == ViewerTrace.generate(viewers: 6, items: 8, seconds: 60, dwell: 0.5...3, jump: 0.33, arrival: 5,
                                              seed: 7))
        #expect(trace != ViewerTrace.generate(viewers: 6, items: 8, seconds: 60, dwell: 0.5...3, jump: 0.33, arrival: 5,
                                              seed: 8))
        let a = Self.run(items: 8, workers: 3, trace.moves)
        let b = Self.run(items: 8, workers: 3, trace.moves)
        #expect(a == b)
        #expect(a.moves == trace.moves.count)
        #expect(a.jobs > 0 && a.cpuUse > 0 && a.cpuUse <= 1)
    }

    /// The CSV reads back what it wrote; a bad line names the file and the line.
    @Test func tracesReadBackAndNameTheirErrors() throws {
        let trace = ViewerTrace.generate(viewers: 2, items: 5, seconds: 10, dwell: 1...2, jump: 0.2, arrival: 1, seed: 1)
        let parsed = try ViewerTrace.parse(trace.csv, path: "t.csv")
        #expect(parsed.moves.map(\.viewer) == trace.moves.map(\.viewer))
        #expect(parsed.moves.map(\.index) == trace.moves.map(\.index))
        #expect(throws: PolicyLabError.malformedTrace(path: "bad.csv", line: 3,
                                                       reason: "index 'x' is not an item index from 0 to 1000000")) {
            try ViewerTrace.parse("viewer,time_s,index\n0,1,2\n0,2,x\n", path: "bad.csv")
        }
        #expect(throws: PolicyLabError.emptyTrace(path: "empty.csv")) {
            try ViewerTrace.parse("viewer,time_s,index\n", path: "empty.csv")
        }
    }
}
