import Feed
@testable import FeedServer
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What stalled readers cost the server, measured in resident memory: `make test` runs this suite alone
/// (VIDEOFEED_ISOLATED=1), so no other test's memory is counted; `make test-sanitizers` runs it under ThreadSanitizer
/// too (the bound left out there: the sanitizer's own memory counts).
@Suite(.serialized, .enabled(if: isolatedRun, "memory test: runs alone under make test"))
struct ServeMemoryTests {
    static let clip = TestFixtures.media("h264_portrait.mp4")

    @Test func readersThatNeverReadHoldNoWholeFile() async throws {
        let server = try await ServerHarness.start(ServeFeeds.loader(try ServeFeeds.folder([Self.clip])), options: {
            $0.limits.writeTimeout = 600
        })
        defer { Task { await server.stop() } }
        // A 32 MiB cached file an item has (its fast-start MP4, replaced by bytes of our own).
        let card = try #require(try await server.allCards().first)
        let mp4 = try #require((card["renditions"] as? [[String: Any]])?.first?["mp4"] as? String)
        let key = String(mp4.dropFirst("/media/".count))
        let size = 32 << 20
        try server.engine.cache.write(key, [UInt8](repeating: 0x42, count: size))
        // One byte of it reads one byte.
        let one = try await server.get(mp4, headers: ["Range": "bytes=1000-1000"])
        #expect(one.status == 206 && one.body == [0x42] && one.headers["content-range"] == "bytes 1000-1000/\(size)")
        // 96 clients that ask for it and never read: whole files held would be 3 GiB; streamed by NIO's writability
        // alone, 1.2 GB was measured; with at most 256 KiB waiting per connection, 21 MiB.
        let before = Self.residentMiB()
        var readers: [Int32] = []
        defer { readers.forEach { close($0) } }
        for _ in 0..<96 {
            let fd = try LoopbackHTTP.connect(server.port)
            var small: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            try LoopbackHTTP.send(fd, Array("GET \(mp4) HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            readers.append(fd)
        }
        // Events, not a delay: every reader has bytes waiting in its socket, so the server took each request and
        // began streaming (a server that read whole files would hold them all by then).
        #expect(await waitForAsync {
            readers.allSatisfy { fd in
                var waiting: Int32 = 0
                let asked = withUnsafeMutablePointer(to: &waiting) { ioctl(fd, UInt(FIONREAD), $0) }
                return asked == 0 && waiting > 0
            }
        })
        #expect(try await server.get("/healthz").status == 200)
        let grown = Self.residentMiB() - before
        if !sanitizerRun {
            #expect(grown < 300, "resident memory grew \(grown) MiB for 96 stalled readers of a 32 MiB file")
        }
    }

    static func residentMiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
    }

}
