import FeedPlayer
import Foundation
import Media
import PolicyLab
import TestSupport
import Testing
import Transcode

/// `videofeed simulate`, `simulate calibrate` and `play --trace`, run as a user runs them.
@Suite struct SimulateCommandTests {
    let cli = TestFixtures.cli
    static let sampleTrace = TestFixtures.root.appendingPathComponent("Tests/PolicyLabTests/Samples/session.csv").path

    @Test("the comparison table lists every policy, and the same seed prints the same numbers")
    func table() throws {
        let args = ["simulate", "--swipes", "300", "--seed", "7", "--csv"]
        let a = try run(cli, args), b = try run(cli, args)
        #expect(a.status == 0, "\(a.stderr)")
        #expect(a.stdout == b.stdout)
        let lines = a.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("policy,budget_mib,swipes,hit_rate,ttff_p50_ms") == true)
        #expect(lines.dropFirst().map { $0.hasPrefix("\"") ? String($0.split(separator: "\"")[0]) : String($0.split(separator: ",")[0]) }
                == ["window(2,2)", "forward2", "tiktokLike", "staged", "swipeAware"])
        #expect(lines.allSatisfy { $0.replacingOccurrences(of: "\"window(2,2)\"", with: "w").split(separator: ",").count == 15 })
        let other = try run(cli, ["simulate", "--swipes", "300", "--seed", "8", "--csv"])
        #expect(other.stdout != a.stdout)
        let text = try run(cli, ["simulate", "--swipes", "100", "--policies", "window,staged", "--budget", "64MiB,256MiB"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("PolicyLab: 100 swipes, model mixed, seed 1"))
        #expect(text.stdout.split(separator: "\n").filter { $0.hasPrefix("staged") }.count == 2)
    }

    @Test("--trace replays a trace; --json holds the scenario and one result per policy")
    func traceJSON() throws {
        let result = try run(cli, ["simulate", "--trace", Self.sampleTrace, "--items", "40", "--policies",
                                   "window,forward2", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let results = object?["results"] as? [[String: Any]]
        #expect(results?.count == 2)
        #expect(results?.first?["swipes"] as? Int == 57, "60 steps, three of them back from the first item or onto itself")
    }

    @Test("bad inputs: one line naming the item, exit 2 (the simulation could not run)", arguments: [
        (["simulate", "--trace", "/nonexistent/t.csv"], "/nonexistent/t.csv: cannot read"),
        (["simulate", "--costs", "/nonexistent/p.json"], "/nonexistent/p.json: cannot read"),
        (["simulate", "--policies", "window,bogus"], "unknown policy 'bogus'"),
        (["simulate", "--model", "impatient"], "--model: unknown model 'impatient'"),
        (["simulate", "--bandwidth", "fast"], "--bandwidth: 'fast' is not a rate"),
    ])
    func badInputs(args: [String], message: String) throws {
        let result = try run(cli, args)
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("videofeed: simulate: ") && result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test("a malformed trace is named with its line; bad options are usage errors")
    func malformedTraceAndOptions() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let trace = folder.appendingPathComponent("t.csv")
        try "time,action\n1.0,n\n2.0,sideways\n".write(to: trace, atomically: true, encoding: .utf8)
        let result = try run(cli, ["simulate", "--trace", trace.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains("\(trace.path):3: malformed trace line: action 'sideways'"), "\(result.stderr)")
        #expect(try run(cli, ["simulate", "--budget", "lots"]).status == 2)
        #expect(try run(cli, ["simulate", "--json", "--csv"]).status == 2)
        #expect(try run(cli, ["play", "--trace", trace.path, "--random", "3"]).status == 2)
    }

    @Test("calibrate measures a file into a profile simulate accepts")
    func calibrate() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let profile = folder.appendingPathComponent("profile.json").path
        let (_, json) = try calibrated(into: profile, frames: 5)
        let item = (json?["items"] as? [[String: Any]])?.first
        #expect(item?["name"] as? String == "h264_portrait.mp4")
        #expect((item?["bytesPerFrame"] as? Int ?? 0) > 0)
        #expect((item?["firstFrameSeconds"] as? Double ?? 0) > 0)
        let simulated = try run(cli, ["simulate", "--costs", profile, "--swipes", "50", "--policies", "window"])
        #expect(simulated.status == 0, "\(simulated.stderr)")
        let bad = try run(cli, ["simulate", "calibrate", TestFixtures.bad("empty.mp4"), "--out", profile])
        #expect(bad.status == 1 && bad.stderr.contains("empty.mp4"))
        // A bad file among good ones is reported and left out; the good one is still measured and written.
        let mixed = try run(cli, ["simulate", "calibrate", TestFixtures.bad("empty.mp4"), TestFixtures.media("hevc.mp4"),
                                  "--out", profile, "--runs", "1", "--frames", "2", "--size", "90x160"])
        #expect(mixed.status == 1 && mixed.stderr.contains("empty.mp4"), "\(mixed.stderr)")
        let written = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: profile))) as? [String: Any]
        #expect((written?["items"] as? [[String: Any]])?.map { $0["name"] as? String } == ["hevc.mp4"])
    }

    @Test("calibrate measures the player's recipe: its stream-info mode, scaling and decoder threads")
    func calibrateUsesThePlayersRecipe() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (result, json) = try calibrated(into: folder.appendingPathComponent("profile.json").path, frames: 1)
        // Calibrate records the settings of the file, decoder and converter it measured; the player's come from
        // its default configuration. They must be the same words.
        let player = PreparationRecipe.player
        #expect(player.openOptions.streamInfo == .header && player.scaling == .fast)
        let expected = "FeedPlayer's recipe: stream info \(player.openOptions.streamInfo), \(player.scaling.rawValue) "
            + "scaling, \(player.decoderOptions.threadCount)-thread decoder"
        let source = try #require(json?["source"] as? String)
        #expect(source.hasSuffix("; " + expected), "\(source)")
        #expect(result.stdout.contains(expected + "\n"), "\(result.stdout)")
    }

    @Test("simulate serve: a trace over a folder, deterministic JSON with the figures the trust check reads; a broken file's moves fail; a bad trace is named")
    func simulateServe() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let media = folder.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        for name in ["a.mp4", "b.mp4", "c.mp4"] {
            try FileManager.default.createSymbolicLink(atPath: media.appendingPathComponent(name).path,
                                                       withDestinationPath: TestFixtures.media("h264_portrait.mp4"))
        }
        try FileManager.default.createSymbolicLink(atPath: media.appendingPathComponent("d.mp4").path,
                                                   withDestinationPath: TestFixtures.bad("random.mp4"))
        let trace = folder.appendingPathComponent("trace.csv")
        try "viewer,time_s,index\n0,0,0\n1,0.5,0\n0,2,1\n1,3,3\n0,4,2\n".write(to: trace, atomically: true, encoding: .utf8)
        let arguments = ["simulate", "serve", media.path, "--trace", trace.path, "--workers", "2", "--json"]
        let first = try run(cli, arguments)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("d.mp4"), "\(first.stderr)")
        let again = try run(cli, arguments)
        #expect(again.stdout == first.stdout)
        let result = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any]
        let ff = result?["first_frame_ms"] as? [String: Any]
        #expect(ff?["p50"] is Double && ff?["p95"] is Double)
        #expect(result?["moves"] as? Int == 5)
        #expect((result?["hit_rate"] as? Double).map { (0...1).contains($0) } == true)
        // Viewer 1's move to the broken file gets no first frame (its card's manifest fails).
        #expect((result?["errors"] as? Int ?? 0) > 0)
        let bad = folder.appendingPathComponent("bad.csv")
        try "viewer,time_s,index\n0,zero,1\n".write(to: bad, atomically: true, encoding: .utf8)
        let refused = try run(cli, ["simulate", "serve", media.path, "--trace", bad.path])
        #expect(refused.status == 2 && refused.stderr.contains("bad.csv:2"), "\(refused.stderr)")
    }

    @Test("simulate serve lists the folder in serve's order: newest first by default, by name with --sort name")
    func simulateServeOrder() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let media = folder.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        // a.mp4 the oldest, c.mp4 in between, b.mp4 the newest: neither order is the other.
        let ages: [(String, Double)] = [("a.mp4", 3000), ("b.mp4", 1000), ("c.mp4", 2000)]
        for (name, age) in ages {
            let file = media.appendingPathComponent(name)
            try FileManager.default.copyItem(atPath: TestFixtures.media("rotate90.mp4"), toPath: file.path)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -age)],
                                                  ofItemAtPath: file.path)
        }
        let trace = folder.appendingPathComponent("trace.csv")
        try "viewer,time_s,index\n0,0,0\n0,1,1\n0,2,2\n".write(to: trace, atomically: true, encoding: .utf8)
        func items(_ extra: [String]) throws -> [String] {
            let result = try run(cli, ["simulate", "serve", media.path, "--trace", trace.path, "--json", "--per-move"] + extra)
            #expect(result.status == 0, "\(result.stderr)")
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let moves = json?["per_move"] as? [[String: Any]] ?? []
            return moves.sorted { ($0["t"] as? Double ?? 0) < ($1["t"] as? Double ?? 0) }.compactMap { $0["item"] as? String }
        }
        #expect(try items([]) == ["b.mp4", "c.mp4", "a.mp4"])
        #expect(try items(["--sort", "newest"]) == ["b.mp4", "c.mp4", "a.mp4"])
        #expect(try items(["--sort", "name"]) == ["a.mp4", "b.mp4", "c.mp4"])
    }

    @Test("calibrate --serve measures serve's jobs for every item of a folder, with the manifest's facts")
    func calibrateServe() throws {
        let folder = try TestFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let media = folder.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        let names = ["h264_portrait.mp4", "hevc.mp4"]
        for name in names {
            try FileManager.default.createSymbolicLink(atPath: media.appendingPathComponent(name).path,
                                                       withDestinationPath: TestFixtures.media(name))
        }
        let profile = folder.appendingPathComponent("serve-costs.json")
        let result = try run(cli, ["simulate", "calibrate", "--serve", media.path, "--out", profile.path, "--repeat", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        let costs = try ServeCosts.load(from: profile)
        #expect(costs.items.map(\.name) == names)
        #expect(costs.cores == ProcessInfo.processInfo.activeProcessorCount)
        for item in costs.items {
            #expect(result.stdout.contains(item.name))
            for cost in [item.manifest, item.poster, item.firstSegment, item.segment] {
                #expect(cost.wall > 0 && cost.cpu > 0, "\(item.name)")
            }
            #expect((item.segmentBytes ?? 0) > 0)
            // The facts are the plan serve's manifest lists (serve's settings and open options).
            let file = try MediaFile(path: TestFixtures.media(item.name), options: .untrusted(streamInfo: .header))
            let plan = try Transcoder(file: file, settings: TranscodeSettings()).plan
            #expect(item.segmentStarts == (0..<plan.segmentCount).map { plan.grid.start($0) }, "\(item.name)")
            #expect(item.duration == plan.duration && item.renditions == plan.renditions.map(\.name))
            #expect(item.width == plan.displayWidth && item.height == plan.displayHeight)
            #expect(item.hasAudio == plan.hasAudio)
            #expect(item.measuredRendition.map(item.renditions.contains) == true)
        }
        // A folder with a file that cannot be served: reported by name and left out, the others measured.
        try FileManager.default.createSymbolicLink(atPath: media.appendingPathComponent("random.mp4").path,
                                                   withDestinationPath: TestFixtures.bad("random.mp4"))
        let mixed = try run(cli, ["simulate", "calibrate", "--serve", media.path, "--out", profile.path, "--repeat", "1"])
        #expect(mixed.status == 1 && mixed.stderr.contains("random.mp4: skipped"), "\(mixed.stderr)")
        #expect(try ServeCosts.load(from: profile).items.map(\.name) == names)
        let both = try run(cli, ["simulate", "calibrate", TestFixtures.media("hevc.mp4"), "--serve", media.path,
                                 "--out", profile.path])
        #expect(both.status == 2 && both.stderr.contains("not both"), "\(both.stderr)")
    }

    /// `simulate calibrate` of h264_portrait.mp4 (one run, 180x320) into `profile`: the run and the profile read back.
    private func calibrated(into profile: String, frames: Int) throws -> (RunResult, [String: Any]?) {
        let result = try run(cli, ["simulate", "calibrate", TestFixtures.media("h264_portrait.mp4"),
                                   "--out", profile, "--runs", "1", "--frames", "\(frames)", "--size", "180x320"])
        #expect(result.status == 0, "\(result.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: profile))
        return (result, try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}
