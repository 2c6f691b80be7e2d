import EngineSupport
import Foundation
import Testing

/// The one rendition rule against the cases in `Fixtures/rendition-rule.json`, which the page's `pickAmong` is
/// checked against too (scripts/serve-browser-test.py, check `rendition-rule`): server and page agree.
@Suite struct RenditionRuleTests {
    struct Cases: Decodable {
        struct Case: Decodable {
            var name: String
            /// Width, height, bits per second.
            var renditions: [[Int]]
            var box: [Int]
            var bps: Int?
            var expect: Int?
        }
        var cases: [Case]
    }

    static func cases() throws -> [Cases.Case] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("Fixtures/rendition-rule.json"))
        return try JSONDecoder().decode(Cases.self, from: data).cases
    }

    @Test func everySharedCaseGetsItsRendition() throws {
        let cases = try Self.cases()
        #expect(cases.count >= 15)
        for c in cases {
            let candidates = c.renditions.map { RenditionRule.Candidate(width: $0[0], height: $0[1], bitrate: $0[2]) }
            let got = RenditionRule.forBox(candidates, width: c.box[0], height: c.box[1], within: c.bps)
            #expect(got == c.expect, "\(c.name): \(String(describing: got))")
            if c.bps == nil {
                #expect(RenditionRule.forBox(candidates, width: c.box[0], height: c.box[1]) == c.expect, "\(c.name)")
            }
        }
    }
}
