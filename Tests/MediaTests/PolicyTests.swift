import Foundation
import Media
import TestSupport
import Testing

/// The open policy for untrusted input: playlists refused unless allowed, remote items never reach `file:`, image
/// sequences held to the one named file, memory input opening nothing else.
@Suite struct PolicyTests {
    static let marker = "VFE-HOSTILE-SECRET-5f1c2a9e"
    static func hostile(_ name: String) -> String {
        TestFixtures.folder.appendingPathComponent("hostile/\(name)").path
    }

    @Test("a playlist that reads a local file is refused by policy, naming the item",
          arguments: ["local_read.m3u8", "local_read.ffconcat"])
    func playlistRefused(name: String) throws {
        let path = Self.hostile(name)
        let error = try #require(throws: MediaError.self) { try MediaFile(path: path) }
        #expect(error.kind == .policyViolation)
        #expect(error.item == path)
        #expect(error.message.contains("playlists are refused"))
        #expect(!error.description.contains(Self.marker))
    }

    @Test("the same playlists from memory are refused too", arguments: ["local_read.m3u8", "local_read.ffconcat"])
    func playlistFromMemoryRefused(name: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.hostile(name)))
        var options = OpenOptions()
        let error = try #require(throws: MediaError.self) { try MediaFile(data: data, name: name, options: options) }
        #expect(error.kind == .policyViolation)
        // Allowed, memory input still opens nothing: the listed file cannot be reached.
        options.allowsPlaylists = true
        do {
            _ = try MediaFile(data: data, name: name, options: options)
            Issue.record("a playlist in memory opened its entries")
        } catch let error as MediaError {
            #expect(!error.description.contains(Self.marker))
        }
    }

    @Test("an allowed remote playlist that lists a file: URL is refused by policy and never reads it")
    func remotePlaylistCannotReachFile() throws {
        let folder = try TestFixtures.temporaryFolder("remote-playlist")
        // A segment extension HLS accepts, so that only the protocol policy stands between the playlist and the file.
        let secret = folder.appendingPathComponent("secret.ts").path
        try FileManager.default.copyItem(atPath: Self.hostile("secret.txt"), toPath: secret)
        let playlist = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:10
            #EXTINF:10.0,
            file://\(secret)
            #EXT-X-ENDLIST

            """
        try Data(playlist.utf8).write(to: folder.appendingPathComponent("remote.m3u8"))
        let server = try StaticHTTPServer(folder: folder.path)
        var options = OpenOptions()
        options.allowsPlaylists = true
        let error = try #require(throws: MediaError.self) {
            try MediaFile(path: server.url("remote.m3u8"), options: options)
        }
        #expect(error.kind == .policyViolation)
        #expect(error.message.contains("not on whitelist"))
        #expect(error.item == server.url("remote.m3u8"))
        #expect(!error.description.contains(Self.marker))
    }

    @Test("an image file whose name looks like a sequence pattern opens only that file")
    func imagePatternIsLiteral() throws {
        let folder = try TestFixtures.temporaryFolder("pattern")
        // If "%d" were a pattern, frame%d.jpg would mean frame0.jpg, frame1.jpg, …: two pictures here.
        for name in ["frame%d.jpg", "frame0.jpg", "frame1.jpg"] {
            try FileManager.default.copyItem(atPath: TestFixtures.media("image.jpg"),
                                             toPath: folder.appendingPathComponent(name).path)
        }
        let decoder = try VideoDecoder(file: MediaFile(path: folder.appendingPathComponent("frame%d.jpg").path))
        var frames = 0
        while try decoder.nextFrame() != nil { frames += 1 }
        #expect(frames == 1)
    }

    @Test("bytes in memory decode to the same frames as the file", arguments: ["hevc.mp4", "vp9.webm", "image.jpg"])
    func memoryMatchesFile(name: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: TestFixtures.media(name)))
        let file = try MediaFile(data: data, name: name, options: OpenOptions(streamInfo: .header))
        #expect(file.item == name)
        #expect(file.info.primaryVideoStream?.width == (try MediaFile(path: TestFixtures.media(name))).info.primaryVideoStream?.width)
        let decoder = try VideoDecoder(file: file, options: DecoderOptions(stream: .firstVideo))
        var writer = FrameMD5Writer(decoder: decoder)
        var text = ""
        while let frame = try decoder.nextFrame() { text += writer.lines(for: frame) }
        #expect(text == (try TestFixtures.golden(name)))
    }

    @Test("empty bytes are invalidData naming the item")
    func emptyMemory() throws {
        let error = try #require(throws: MediaError.self) { try MediaFile(data: Data(), name: "upload-1") }
        #expect(error.kind == .invalidData)
        #expect(error.item == "upload-1")
    }
}

/// Work limits per opened file: decoded frames and decoded bytes.
@Suite struct LimitTests {
    @Test("decoding stops with limitExceeded after maxDecodedFrames frames")
    func frameLimit() throws {
        var options = OpenOptions()
        options.maxDecodedFrames = 5
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4"), options: options))
        var frames = 0
        let error = try #require(throws: MediaError.self) { while try decoder.nextFrame() != nil { frames += 1 } }
        #expect(error.kind == .limitExceeded)
        #expect(error.message.contains("5 frames"))
        #expect(frames == 5)
    }

    @Test("decoding stops with limitExceeded once the decoded bytes pass maxDecodedBytes")
    func byteLimit() throws {
        // h264_portrait is 720x1280 yuv420p: 1,382,400 bytes a frame; the limit lets two frames through.
        var options = OpenOptions()
        options.maxDecodedBytes = 720 * 1280 * 3 / 2 * 2 + 1
        let decoder = try VideoDecoder(file: MediaFile(path: TestFixtures.media("h264_portrait.mp4"), options: options))
        var frames = 0
        let error = try #require(throws: MediaError.self) { while try decoder.nextFrame() != nil { frames += 1 } }
        #expect(error.kind == .limitExceeded)
        #expect(frames == 2)
    }

    @Test("the limits count over every decoder of one file, and a new file starts from zero")
    func limitsPerFile() throws {
        var options = OpenOptions()
        options.maxDecodedFrames = 3
        let file = try MediaFile(path: TestFixtures.media("hevc.mp4"), options: options)
        let first = try VideoDecoder(file: file)
        for _ in 0..<2 { _ = try first.nextFrame() }
        let second = try VideoDecoder(file: file)
        _ = try second.nextFrame()
        #expect(throws: MediaError.self) { _ = try second.nextFrame() }
        let fresh = try VideoDecoder(file: MediaFile(path: TestFixtures.media("hevc.mp4"), options: options))
        #expect(try fresh.nextFrame() != nil)
    }
}
