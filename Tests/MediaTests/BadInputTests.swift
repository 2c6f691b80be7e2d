import Foundation
import Media
import TestSupport
import Testing

/// Each bad input fails with its own typed error that names the item; nothing crashes.
@Suite struct BadInputTests {
    static let cases: [(String, MediaError.Kind, String)] = [
        ("empty.mp4", .invalidData, "empty"),
        ("truncated.mp4", .invalidData, "moov atom not found"),
        ("random.mp4", .invalidData, "Invalid data"),
        ("text.mp4", .invalidData, "Invalid data"),
        ("text.txt", .invalidData, "Invalid data"),
    ]

    @Test("a bad file fails to open with a specific kind", arguments: cases)
    func opens(name: String, kind: MediaError.Kind, detail: String) throws {
        let path = TestFixtures.bad(name)
        let error = try #require(throws: MediaError.self) { try MediaFile(path: path) }
        #expect(error.kind == kind)
        #expect(error.item == path)
        #expect(error.operation == "open")
        #expect(error.message.contains(detail))
        #expect(!error.description.contains("\n"))
    }

    @Test("audio without a cover opens but has no video stream")
    func audioOnly() throws {
        let file = try MediaFile(path: TestFixtures.bad("audio_only.m4a"))
        #expect(file.info.primaryVideoStream == nil)
        let error = try #require(throws: MediaError.self) { try VideoDecoder(file: file) }
        #expect(error.kind == .noVideoStream)
        #expect(error.item.hasSuffix("audio_only.m4a"))
    }

    @Test("a missing file is fileNotFound, a folder is invalidArgument")
    func missingAndFolder() throws {
        let missing = try #require(throws: MediaError.self) { try MediaFile(path: "/nonexistent/clip.mp4") }
        #expect(missing.kind == .fileNotFound)
        #expect(missing.item == "/nonexistent/clip.mp4")
        let folder = try #require(throws: MediaError.self) { try MediaFile(path: TestFixtures.folder.path) }
        #expect(folder.kind == .invalidArgument)
    }

    @Test("protocols outside the whitelist are refused before FFmpeg sees them")
    func whitelist() throws {
        let ftp = try #require(throws: MediaError.self) { try MediaFile(path: "ftp://example.invalid/a.mp4") }
        #expect(ftp.kind == .protocolNotAllowed)
        var options = OpenOptions()
        options.protocolWhitelist = ["http", "https", "tcp", "tls"]
        let local = try #require(throws: MediaError.self) {
            try MediaFile(path: TestFixtures.media("hevc.mp4"), options: options)
        }
        #expect(local.kind == .protocolNotAllowed)
    }

    @Test("credentials never appear in errors")
    func credentialsHidden() throws {
        let error = try #require(throws: MediaError.self) {
            try MediaFile(path: "gopher://user:secret@example.invalid/a.mp4")
        }
        #expect(!error.description.contains("secret"))
    }

    @Test("a refused connection is an I/O error naming the URL")
    func refused() throws {
        let error = try #require(throws: MediaError.self) { try MediaFile(path: "http://127.0.0.1:9/none.mp4") }
        #expect(error.kind == .io)
        #expect(error.item == "http://127.0.0.1:9/none.mp4")
    }

    @Test("the size limit rejects frames larger than allowed before decoding")
    func sizeLimit() throws {
        var options = OpenOptions()
        options.maxPixelCount = 100 * 100
        let error = try #require(throws: MediaError.self) {
            try MediaFile(path: TestFixtures.media("h264_portrait.mp4"), options: options)
        }
        #expect(error.kind == .limitExceeded)
    }

    @Test("real-world broken files from ../shared/media give an error or frames, never a crash",
          .enabled(if: FileManager.default.fileExists(atPath: TestFixtures.root.appendingPathComponent("../shared/media").path)),
          arguments: ["invalid-bitstream.webm", "sample_with_invalid_nalu.mp4", "sample_mdat_too_long.mp4"])
    func sharedBroken(name: String) throws {
        let path = TestFixtures.root.appendingPathComponent("../shared/media/\(name)").standardized.path
        do {
            let decoder = try VideoDecoder(file: MediaFile(path: path))
            var frames = 0
            while try decoder.nextFrame() != nil { frames += 1 }
            #expect(frames > 0)
        } catch let error as MediaError {
            #expect(error.item == path)
        }
    }
}
