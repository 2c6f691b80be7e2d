import Foundation
import Feed
import Testing
@testable import Thumbnails

/// public_id → file name: folders kept, nothing escapes the output folder.
@Suite struct OutputPathTests {
    static let hostile = ["../x", "/etc/x", "a/../../b", "..", "/", "", "./.", "a//b",
                          String(repeating: "z", count: 5000),
                          "evil\u{0}name", "line\nbreak\u{1b}[31m", "back\\slash\\..\\..", ".hidden", "a/./b/../../..",
                          String(repeating: "d/", count: 50) + "deep", "résumé/ünïcode"]

    @Test("hostile ids stay inside OUT", arguments: hostile)
    func staysInside(id: String) {
        let root = URL(fileURLWithPath: "/tmp/out-root")
        let relative = OutputPath.relative(for: id)
        #expect(!relative.hasPrefix("/"))
        let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
        #expect(!parts.contains { $0 == ".." || $0 == "." || $0.isEmpty || $0.hasPrefix(".") }, "\(relative)")
        #expect(!relative.unicodeScalars.contains { $0.value < 0x20 || $0 == "\\" })
        #expect(parts.allSatisfy { $0.utf8.count <= 120 })
        let file = OutputPath.file(for: id, suffix: ".jpg", in: root)
        #expect(file.path.hasPrefix("/tmp/out-root/"))
    }

    @Test("ordinary ids keep their folders unchanged")
    func ordinary() {
        #expect(OutputPath.relative(for: "travel/lisbon/tram_28") == "travel/lisbon/tram_28")
        #expect(OutputPath.relative(for: "1448735") == "1448735")
    }

    @Test("ids that sanitise alike still get different files")
    func noCollision() {
        let names = ["x", "../x", "/x", "./x", "x/"].map(OutputPath.relative(for:))
        #expect(Set(names).count == names.count, "\(names)")
    }
}
