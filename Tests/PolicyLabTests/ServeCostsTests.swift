import Foundation
import PolicyLab
import Testing

/// ``ServeCosts``: the serve cost profile `simulate calibrate --serve` writes and the simulator reads.
@Suite struct ServeCostsTests {
    /// An item of `width`×`height` lasting `duration` s whose costs are `scale` times a base.
    static func item(_ name: String, _ width: Int, _ height: Int, duration: Double = 10, scale: Double) -> ServeCosts.Item {
        func cost(_ wall: Double) -> ServeCosts.Cost { ServeCosts.Cost(wall: wall * scale, cpu: wall * scale * 1.6) }
        let profile = ServeCosts(source: "", cores: 2, items: [])
        return ServeCosts.Item(name: name, width: width, height: height, duration: duration,
                               segmentStarts: profile.grid(duration: duration), renditions: ["540x960", "360x640"],
                               hasAudio: true, manifest: cost(0.5), poster: cost(0.05), firstSegment: cost(0.2),
                               segment: cost(0.3), segmentBytes: Int(200_000 * scale), measuredRendition: "540x960")
    }

    static let profile = ServeCosts(source: "test", cores: 2, items: [
        item("small.mp4", 360, 640, scale: 0.4), item("hd.mp4", 1080, 1920, scale: 1),
        item("4k.mp4", 2160, 3840, scale: 3.5),
    ])

    static func temporaryFile(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("servecosts-\(getpid())-\(UUID().uuidString)-\(name)")
    }

    @Test("a profile written and loaded again is the same, and the write leaves no temporary file")
    func roundTrip() throws {
        let url = Self.temporaryFile("profile.json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Self.profile.write(to: url)
        #expect(try ServeCosts.load(from: url) == Self.profile)
        let decoded = try JSONDecoder().decode(ServeCosts.self, from: try Self.profile.json())
        #expect(decoded == Self.profile)
        let left = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
            .filter { $0.hasPrefix("." + url.lastPathComponent) }
        #expect(left.isEmpty)
    }

    @Test("load names the file of malformed JSON, a missing field, and an impossible item")
    func malformed() throws {
        let url = Self.temporaryFile("bad.json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data("{ not json".utf8).write(to: url)
        #expect(throws: PolicyLabError.malformedProfile(path: url.path, reason: "not JSON of the serve cost profile's shape")) {
            try ServeCosts.load(from: url)
        }
        var object = try #require(try JSONSerialization.jsonObject(with: Self.profile.json()) as? [String: Any])
        object["cores"] = nil
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        #expect(throws: PolicyLabError.malformedProfile(path: url.path, reason: "missing \"cores\"")) {
            try ServeCosts.load(from: url)
        }
        var bad = Self.profile
        bad.items[1].segmentStarts = [0, 2, 1]
        try bad.json().write(to: url)
        #expect(throws: PolicyLabError.malformedProfile(path: url.path, reason: "hd.mp4: segmentStarts must increase")) {
            try ServeCosts.load(from: url)
        }
        let missing = Self.temporaryFile("missing.json")
        let error = #expect(throws: PolicyLabError.self) { try ServeCosts.load(from: missing) }
        #expect(error?.description.hasPrefix(missing.path) == true)
    }

    @Test("writing into a folder that does not exist fails naming the file, and leaves nothing")
    func unwritable() throws {
        let url = Self.temporaryFile("no-such-folder").appendingPathComponent("profile.json")
        let error = #expect(throws: PolicyLabError.self) { try Self.profile.write(to: url) }
        #expect(error?.description.hasPrefix(url.path + ": cannot write") == true, "\(String(describing: error))")
    }

    @Test("estimate gives a calibrated size its own costs")
    func estimateAtCalibratedSizes() {
        for item in Self.profile.items {
            let estimate = Self.profile.estimate(width: item.width, height: item.height, duration: item.duration)
            #expect(estimate.manifest == item.manifest && estimate.poster == item.poster)
            #expect(estimate.firstSegment == item.firstSegment && estimate.segment == item.segment)
            #expect(estimate.segmentStarts == item.segmentStarts && estimate.renditions == item.renditions)
            #expect(Self.profile.item(named: item.name, width: 1, height: 1, duration: 1) == item)
        }
        // One item: its own costs at its size, cost per pixel elsewhere.
        let one = ServeCosts(source: "", cores: 2, items: [Self.profile.items[1]])
        #expect(one.estimate(width: 1080, height: 1920, duration: 3).segment == Self.profile.items[1].segment)
        let half = one.estimate(width: 540, height: 1920, duration: 3).segment.wall
        #expect(abs(half - Self.profile.items[1].segment.wall / 2) < 1e-12)
    }

    @Test("estimate never falls as pixels or duration grow, inside and outside the calibrated range",
          arguments: [false, true])
    func estimateIsMonotone(unordered: Bool) {
        // Unordered: a smaller item that costs more than a larger one (a 10-bit HEVC source); the fit stays monotone.
        var profile = Self.profile
        if unordered { profile.items.append(Self.item("hevc10.mp4", 720, 1280, scale: 1.5)) }
        let sides = [(90, 160), (180, 320), (360, 640), (540, 960), (720, 1280), (1080, 1920), (1440, 2560),
                     (2160, 3840), (4320, 7680)]
        let durations = [1.0, 5, 30, 300]
        var previous: [ServeCosts.Item] = []
        for (w, h) in sides {
            let row = durations.map { profile.estimate(width: w, height: h, duration: $0) }
            for (a, b) in zip(row, row.dropFirst()) {
                #expect(Self.costs(b).elementsEqual(Self.costs(a), by: >=))
                #expect(b.segmentStarts.count >= a.segmentStarts.count)
            }
            for (a, b) in zip(previous, row) { #expect(Self.costs(b).elementsEqual(Self.costs(a), by: >=), "\(w)x\(h)") }
            #expect(Self.costs(row[0]).allSatisfy { $0 > 0 && $0.isFinite })
            previous = row
        }
    }

    @Test("an estimate's grid is the profile's: a 1 s first segment, then 2 s")
    func grid() {
        #expect(Self.profile.grid(duration: 0.8) == [0])
        #expect(Self.profile.grid(duration: 1) == [0])
        #expect(Self.profile.grid(duration: 6.5) == [0, 1, 3, 5])
        #expect(Self.profile.estimate(width: 100, height: 100, duration: 7).segmentStarts == [0, 1, 3, 5])
    }

    static func costs(_ item: ServeCosts.Item) -> [Double] {
        [item.manifest, item.poster, item.firstSegment, item.segment].flatMap { [$0.wall, $0.cpu] }
    }
}
