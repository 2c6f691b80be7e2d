import Foundation
import PolicyLab
import Prefetch
import Testing

private let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Samples")
private func sample(_ name: String) -> String { samples.appendingPathComponent(name).path }

@Suite struct TraceReplayTests {
    /// The sample session replayed over a 40-item feed with the sample profile, every built-in policy.
    static func replay(_ trace: String) throws -> [SimulationMetrics] {
        let session = try SwipeTrace.load(path: sample(trace))
        let scenario = Scenario(session: session, feedLength: 40, costs: try CostProfile.load(path: sample("profile.json")),
                                seed: 1, workers: 2, cores: 2, budget: 128 << 20)
        return try PolicySimulator(scenario: scenario).compare(BuiltInPolicies.all)
    }

    @Test("replaying the committed sample trace gives the committed expected metrics")
    func committedExpectation() throws {
        let expected = try JSONDecoder().decode([SimulationMetrics].self,
                                                from: Data(contentsOf: samples.appendingPathComponent("session.expected.json")))
        let actual = try Self.replay("session.csv")
        #expect(actual.count == expected.count)
        for (a, e) in zip(actual, expected) {
            #expect(a.policy == e.policy)
            #expect(a.swipes == e.swipes && a.hits == e.hits && a.misses == e.misses)
            #expect(a.stalls == e.stalls && a.framesDecoded == e.framesDecoded && a.framesShown == e.framesShown)
            #expect(a.wastedFrames == e.wastedFrames && a.wastedBytes == e.wastedBytes)
            #expect(a.cancellations == e.cancellations && a.jobsStarted == e.jobsStarted)
            #expect(a.peakDecodedBytes == e.peakDecodedBytes)
            for (x, y) in [(a.timeToFirstFrameP50, e.timeToFirstFrameP50), (a.timeToFirstFrameP95, e.timeToFirstFrameP95),
                           (a.timeToFirstFrameP99, e.timeToFirstFrameP99), (a.stallSeconds, e.stallSeconds),
                           (a.virtualSeconds, e.virtualSeconds)] {
                #expect(abs(x - y) < 1e-6)
            }
        }
    }

    @Test("the CSV and JSON Lines forms of the sample trace are the same session")
    func csvAndJSONLinesAgree() throws {
        let csv = try SwipeTrace.load(path: sample("session.csv"))
        let jsonl = try SwipeTrace.load(path: sample("session.jsonl"))
        #expect(csv == jsonl)
        #expect(csv.steps.count == 60)
        #expect(abs(csv.initialWatch - 3.878) < 1e-12)
        #expect(try Self.replay("session.jsonl") == Self.replay("session.csv"))
    }

    @Test("times become watch times: first swipe's time, gaps, then the end")
    func watchTimes() throws {
        let entries = try SwipeTrace.parse("time,index\n1.5,n\n2.0,7\n4.0,p\n5.5,end\n", path: "t.csv")
        let session = try SwipeTrace.session(from: entries, path: "t.csv")
        #expect(session.initialWatch == 1.5)
        #expect(session.steps == [.init(action: .next, watch: 0.5), .init(action: .jump(7), watch: 2),
                                  .init(action: .previous, watch: 1.5)])
    }

    @Test("a generated session written as a trace reads back as the same swipes")
    func roundTrip() throws {
        let scenario = Scenario.generated(model: .scroller, swipes: 100, seed: 9)
        for format in SwipeTrace.Format.allCases {
            let text = SwipeTrace.text(of: scenario.session, format: format)
            let back = try SwipeTrace.session(from: SwipeTrace.parse(text, path: "x.\(format.rawValue)"), path: "x")
            #expect(back.steps.map(\.action) == scenario.session.steps.map(\.action))
            #expect(zip(back.steps, scenario.session.steps).allSatisfy { abs($0.watch - $1.watch) < 0.002 })
        }
    }
}

@Suite struct BadInputTests {
    @Test("malformed trace lines are reported with the file and line", arguments: [
        ("time,action\n1.0,n\nabc,n\n", 3),
        ("1.0,n\n0.5,n\n", 2),
        ("1.0,n,extra\n", 1),
        ("1.0,x\n", 1),
        ("1.0,end\n2.0,n\n", 2),
        ("-1,n\n", 1),
    ])
    func malformedCSV(text: String, line: Int) {
        #expect {
            try SwipeTrace.parse(text, path: "bad.csv")
        } throws: { error in
            guard case PolicyLabError.malformedTrace(let path, let at, _) = error else { return false }
            return path == "bad.csv" && at == line
        }
    }

    @Test("malformed JSON Lines are reported with the line")
    func malformedJSONLines() {
        #expect(throws: PolicyLabError.malformedTrace(path: "bad.jsonl", line: 2, reason: "not a JSON object")) {
            try SwipeTrace.parse("{\"time\": 1, \"action\": \"n\"}\n{oops\n", path: "bad.jsonl")
        }
        #expect(throws: PolicyLabError.malformedTrace(path: "bad.jsonl", line: 1, reason: "missing \"action\" or \"index\"")) {
            try SwipeTrace.parse("{\"time\": 1}\n", path: "bad.jsonl")
        }
    }

    @Test("a missing trace, an empty trace and a trace of only comments are named")
    func missingAndEmpty() throws {
        #expect {
            try SwipeTrace.load(path: "/nonexistent/trace.csv")
        } throws: { error in
            if case PolicyLabError.unreadableFile(let path, _) = error { return path == "/nonexistent/trace.csv" }
            return false
        }
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("policylab-empty-\(UUID().uuidString).csv")
        try "# nothing\ntime,action\n".write(to: empty, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: empty) }
        #expect(throws: PolicyLabError.emptyTrace(path: empty.path)) { try SwipeTrace.load(path: empty.path) }
    }

    @Test("bad cost profiles are named with what is wrong", arguments: [
        ("{", "not JSON of the profile's shape"),
        ("{\"version\": 1, \"source\": \"x\", \"display\": \"x\"}", "missing \"items\""),
        ("{\"version\": 2, \"source\": \"x\", \"display\": \"x\", \"items\": []}", "version 2 is not 1"),
        ("{\"version\": 1, \"source\": \"x\", \"display\": \"x\", \"items\": []}", "no items"),
        ("{\"version\": 1, \"source\": \"x\", \"display\": \"x\", \"items\": [{\"name\": \"a\", \"openSeconds\": -1, \"decoderOpenSeconds\": 0, \"firstFrameSeconds\": 0, \"frameSeconds\": 0, \"bytesPerFrame\": 1, \"frameRate\": 30}]}",
         "a: openSeconds must be at least 0"),
        ("{\"version\": 1, \"source\": \"x\", \"display\": \"x\", \"items\": [{\"name\": \"a\", \"openSeconds\": 0, \"decoderOpenSeconds\": 0, \"firstFrameSeconds\": 0, \"frameSeconds\": \"fast\", \"bytesPerFrame\": 1, \"frameRate\": 30}]}",
         "wrong type at \"items.Index 0.frameSeconds\""),
    ])
    func badProfile(json: String, reason: String) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("policylab-profile-\(UUID().uuidString).json")
        try json.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(throws: PolicyLabError.malformedProfile(path: file.path, reason: reason)) {
            try CostProfile.load(path: file.path)
        }
    }

    @Test("unknown policies and bad model parameters are named")
    func badOptions() {
        #expect(throws: PolicyLabError.unknownPolicy("fastest")) { try PolicySimulator.policies(named: "window,fastest") }
        #expect(throws: PolicyLabError.self) { try SwipeModel.parse("impatient") }
        #expect(throws: PolicyLabError.self) { try SwipeModel.parse("mixed,quick=2") }
        #expect(throws: PolicyLabError.self) { try SwipeModel.parse("mixed,speed=2") }
        #expect(throws: PolicyLabError.self) { try SwipeModel.parse("mixed,quick=0.7,end=0.5") }
        #expect(throws: PolicyLabError.invalidParameter(name: "--bandwidth", reason: "'fast' is not a rate like 4Mbps or 800kbps")) {
            try NetworkModel.parseRate("fast", option: "--bandwidth")
        }
        #expect(throws: PolicyLabError.self) {
            try PolicySimulator(scenario: Scenario(session: SwipeSession(initialWatch: 1, steps: []), feedLength: 0))
        }
    }

    @Test("model overrides are applied and named")
    func modelOverrides() throws {
        let model = try SwipeModel.parse("scroller,back=0.2,median=20")
        #expect(model.backRate == 0.2 && model.medianDuration == 20 && model.quickLeave == SwipeModel.scroller.quickLeave)
        #expect(model.name == "scroller*")
        #expect(try SwipeModel.parse("patient") == .patient)
    }
}
