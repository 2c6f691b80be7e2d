import Foundation
import Testing
@testable import Feed

/// Writes and deletes in an output folder never leave it through a symbolic link (issue 14).
@Suite struct OutputFolderTests {
    func folder() throws -> (root: URL, out: URL, elsewhere: URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("outfolder-\(UUID().uuidString.prefix(8))")
        let out = root.appendingPathComponent("out"), elsewhere = root.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: out.appendingPathComponent("inner"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent("away").path,
                                                   withDestinationPath: "../elsewhere")
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent("near").path,
                                                   withDestinationPath: "inner")
        return (root, out, elsewhere)
    }

    @Test("a link leading out of the folder is refused for writing, a link inside it is followed")
    func prepare() throws {
        let (_, out, elsewhere) = try folder()
        let output = OutputFolder(out)
        #expect(throws: OutputFolder.Refusal.self) { _ = try output.prepare("away/new.jpg") }
        #expect(throws: OutputFolder.Refusal.self) { _ = try output.prepare("away/deeper/new.jpg") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
        let inside = try output.prepare("near/a/b.jpg")
        #expect(inside.path.hasSuffix("/out/inner/a/b.jpg"))
        #expect(try output.prepare("x/y/z.jpg").path.hasSuffix("/out/x/y/z.jpg"))
        #expect(throws: OutputFolder.Refusal.self) { _ = try output.prepare("../escape.jpg") }
    }

    @Test("removal never goes through a link out of the folder, and removes a link itself, not its target")
    func remove() throws {
        let (_, out, elsewhere) = try folder()
        let victim = elsewhere.appendingPathComponent("victim.jpg")
        try Data("precious".utf8).write(to: victim)
        let output = OutputFolder(out)
        #expect(throws: OutputFolder.Refusal.self) { try output.remove("away/victim.jpg") }
        #expect(FileManager.default.fileExists(atPath: victim.path))
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent("thumb.jpg").path,
                                                   withDestinationPath: victim.path)
        try output.remove("thumb.jpg")
        #expect(FileManager.default.fileExists(atPath: victim.path))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: out.appendingPathComponent("thumb.jpg").path)) == nil)
        try output.remove("missing/none.jpg")
        #expect(!output.contains("away/victim.jpg"))
    }
}
