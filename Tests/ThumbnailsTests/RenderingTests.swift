import Foundation
import Media
import TestSupport
import Testing
@testable import Thumbnails
import Transcode

/// Frame choice and rendering on the committed fixtures and a few generated clips.
@Suite struct RenderingTests {
    @Test("every playable fixture gives a thumbnail 320 wide with the picture's aspect",
          arguments: TestFixtures.mediaNames)
    func defaultSize(name: String) throws {
        let path = TestFixtures.media(name)
        let shown = try #require(MediaFile(path: path).info.primaryVideoStream).displaySize
        let result = try ThumbnailRenderer().render(path: path)
        let image = try #require(result.images.first)
        #expect(result.images.count == 1)
        #expect(image.width == 320)
        let expected = 320.0 * Double(shown.height) / Double(shown.width)
        #expect(abs(Double(image.height) - expected) <= 2, "\(image.size) for \(shown)")
    }

    @Test("every playable fixture fits a 160x160 box and fills a 96 square", arguments: TestFixtures.mediaNames)
    func boxAndSquare(name: String) throws {
        let path = TestFixtures.media(name)
        let fitted = try ThumbnailRenderer(options: ThumbnailOptions(box: Size(width: 160, height: 160)))
            .render(path: path).images[0]
        #expect(max(fitted.width, fitted.height) == 160 && fitted.width <= 160 && fitted.height <= 160)
        let square = try ThumbnailRenderer(options: ThumbnailOptions(box: Size(width: 96, height: 0), square: true))
            .render(path: path).images[0]
        #expect(square.size == Size(width: 96, height: 96))
    }

    @Test("rotated fixtures come out upright: red marker top-left, blue bottom-right",
          arguments: ["rotate90.mp4", "rotate270.mp4"])
    func upright(name: String) throws {
        let image = try ThumbnailRenderer(options: ThumbnailOptions(box: Size(width: 240, height: 0)))
            .render(path: TestFixtures.media(name)).images[0]
        #expect(image.size == Size(width: 240, height: 320))
        let topLeft = Array(image.pixel(x: 10, y: 10))
        let bottomRight = Array(image.pixel(x: 229, y: 309))
        #expect(topLeft[0] > 200 && topLeft[1] < 60 && topLeft[2] < 60, "top-left \(topLeft)")
        #expect(bottomRight[2] > 200 && bottomRight[0] < 60 && bottomRight[1] < 60, "bottom-right \(bottomRight)")
    }

    @Test("auto never picks the black opening of black_start.mp4")
    func autoSkipsBlack() throws {
        let result = try ThumbnailRenderer(options: ThumbnailOptions(positions: [.auto]))
            .render(path: TestFixtures.media("black_start.mp4"))
        #expect(!result.blank)
        #expect(!LumaStatistics(result.images[0]).isBlank)
        #expect((result.times[0] ?? 0) >= 1.0)
    }

    @Test("an all-black clip still yields a thumbnail, flagged blank")
    func allBlack() throws {
        let result = try ThumbnailRenderer(options: ThumbnailOptions(positions: [.auto]))
            .render(path: GeneratedClip.allBlack())
        #expect(result.images.count == 1)
        #expect(result.blank)
    }

    @Test("10-bit SDR gray stays neutral gray, like the 8-bit decode")
    func tenBitNotGreen() throws {
        let result = try ThumbnailRenderer().render(path: GeneratedClip.gray10bit())
        let mean = meanColor(result.images[0].bytes)
        #expect(result.toneMapping == .none)
        #expect(abs(mean.g - mean.r) < 4 && abs(mean.g - mean.b) < 4, "\(mean)")
        #expect(abs(mean.g - 128) < 8, "\(mean)")
    }

    @Test("the 10-bit fixture looks like its 8-bit twin")
    func tenBitFixture() throws {
        let ten = try ThumbnailRenderer().render(path: TestFixtures.media("hevc_10bit.mp4")).images[0]
        let eight = try ThumbnailRenderer().render(path: TestFixtures.media("hevc.mp4")).images[0]
        let a = meanColor(ten.bytes), b = meanColor(eight.bytes)
        #expect(abs(a.r - b.r) < 6 && abs(a.g - b.g) < 6 && abs(a.b - b.b) < 6, "\(a) vs \(b)")
    }

    @Test("PQ and HLG gray is tone mapped to neutral SDR gray, neither black nor washed out",
          arguments: ["smpte2084", "arib-std-b67"])
    func hdrToneMapped(transfer: String) throws {
        let path = try GeneratedClip.gray10bit(transfer: transfer)
        let stream = try #require(MediaFile(path: path).info.primaryVideoStream)
        try #require(stream.isHDR, "ffmpeg did not tag the clip \(transfer)")
        let result = try ThumbnailRenderer().render(path: path)
        let mean = meanColor(result.images[0].bytes)
        #expect(result.toneMapping == (transfer == "smpte2084" ? .pq : .hlg))
        #expect(abs(mean.g - mean.r) < 4 && abs(mean.g - mean.b) < 4, "\(mean)")
        #expect(mean.g > 40 && mean.g < 235, "\(mean)")
    }

    @Test("HDR is tone-mapped by the renditions' curve: on a PQ or HLG ramp black stays black, PQ reference white (203 cd/m²) is mid-light, peaks clip to white, and light never falls as the signal rises",
          arguments: ["smpte2084", "arib-std-b67"])
    func hdrRamp(transfer: String) throws {
        let path = try GeneratedClip.ramp10bit(transfer: transfer)
        var options = ThumbnailOptions(positions: [.seconds(0)], box: Size(width: 256, height: 0))
        options.format = .png
        let result = try ThumbnailRenderer(options: options).render(path: path)
        #expect(result.toneMapping == (transfer == "smpte2084" ? .pq : .hlg))
        let image = result.images[0]
        try #require(image.width == 256)
        let row = image.height / 2
        let greens = (0..<image.width).map { Int(Array(image.pixel(x: $0, y: row))[1]) }
        #expect(greens[0] <= 2 && greens[16] <= 2, "below and at black: \(greens.prefix(20))")
        #expect(greens[255] >= 250, "past peak: \(greens.suffix(20))")
        #expect(zip(greens, greens.dropFirst()).allSatisfy { $1 >= $0 - 1 }, "\(greens)")
        if transfer == "smpte2084" {
            // 203 cd/m² is PQ 0.58: limited-range code 64 + 0.58 × 876 = 572, column 143.
            #expect((100...235).contains(greens[143]), "reference white: \(greens[143])")
        }
    }

    @Test("an HDR item's poster has the mean luma of its rendition's first frame, within 1 % (the issue asks 2 %; a curve of its own, or 4:4:4 chroma, gave 1.5–2.6 %): both are tone-mapped by one curve to 4:2:0",
          arguments: ["hdr10_pq.mp4", "hlg.mp4", "hdr10_rotated_phone.mp4"])
    func posterIsTheFirstFrame(name: String) throws {
        let source = TestFixtures.transcode(name)
        // The poster as `serve` makes it.
        var options = ThumbnailOptions(positions: [.seconds(0)], box: Size(width: 360, height: 0))
        options.format = .jpeg
        let poster = try ThumbnailRenderer(options: options).render(path: source).images[0]
        #expect(poster.width == 360 || poster.height <= 1440)
        // The rendition's first frame, decoded and turned to RGB as a browser shows it (BT.709, no tone mapping left).
        var settings = TranscodeSettings()
        settings.ladder = [Size(width: 720, height: 1280)]
        settings.preview = nil
        let out = try TestFixtures.temporaryFolder("poster-luma")
        defer { try? FileManager.default.removeItem(at: out) }
        let report = try Transcoder(file: MediaFile(path: source), settings: settings).run(into: out)
        #expect(report.toneMapped)
        let rendition = out.appendingPathComponent("720x1280.mp4").path
        let decoder = try VideoDecoder(file: MediaFile(path: rendition), options: DecoderOptions(threadCount: 1))
        let first = try #require(try decoder.nextFrame())
        let frame = try FrameConverter(pixelFormat: .rgb24, upright: true).convert(first)
        func luma(_ image: Image) -> Double {
            let mean = meanColor(image.bytes)
            return 0.2126 * mean.r + 0.7152 * mean.g + 0.0722 * mean.b
        }
        let ours = luma(poster), video = luma(frame)
        #expect(abs(ours - video) / video < 0.01, "poster \(ours), first frame \(video)")
    }

    @Test("audio with cover art gives the cover: orange square in the middle")
    func cover() throws {
        let image = try ThumbnailRenderer().render(path: TestFixtures.media("cover.mp3")).images[0]
        let center = Array(image.pixel(x: image.width / 2, y: image.height / 2))
        #expect(image.size == Size(width: 320, height: 320))
        #expect(center[0] > 220 && center[1] > 100 && center[1] < 160 && center[2] < 40, "\(center)")
    }

    @Test("still images give themselves resized, for every position", arguments: ["image.png", "image.jpg"])
    func stills(name: String) throws {
        let result = try ThumbnailRenderer(options: ThumbnailOptions(positions: [.fraction(0.1), .auto, .seconds(9)]))
            .render(path: TestFixtures.media(name))
        #expect(result.images.count == 3)
        #expect(result.images.allSatisfy { $0 == result.images[0] && $0.width == 320 })
    }

    @Test("several positions from one open, each frame at or after its target")
    func severalPositions() throws {
        let result = try ThumbnailRenderer(options: ThumbnailOptions(
            positions: [.fraction(0.1), .fraction(0.5), .seconds(1.5)], exact: true)).render(path: TestFixtures.media("vfr.mp4"))
        let times = result.times.map { $0 ?? -1 }
        #expect(times.count == 3)
        #expect(times[0] >= 0.225 - 0.01 && times[1] >= 1.125 - 0.01 && times[2] >= 1.5 - 0.01, "\(times)")
        #expect(times[0] < times[1] && times[1] < times[2])
    }

    @Test("by default a position takes the keyframe at or before it, with exact the frame at or after it")
    func keyframeOrExact() throws {
        let path = TestFixtures.media("h264_portrait.mp4")
        let fast = try ThumbnailRenderer(options: ThumbnailOptions(positions: [.fraction(0.5)])).render(path: path)
        let exact = try ThumbnailRenderer(options: ThumbnailOptions(positions: [.fraction(0.5)], exact: true))
            .render(path: path)
        let fastTime = try #require(fast.times[0]), exactTime = try #require(exact.times[0])
        #expect(fastTime < 1.0 && exactTime >= 1.0 - 0.01, "fast \(fastTime), exact \(exactTime)")
    }

    @Test("positions that would share a keyframe take their exact frames instead: every thumbnail its own picture")
    func distinctPositions() throws {
        // h264_portrait.mp4 has one keyframe, at 0.
        let result = try ThumbnailRenderer(options: ThumbnailOptions(
            positions: [.fraction(0.25), .fraction(0.5), .fraction(0.75)]))
            .render(path: TestFixtures.media("h264_portrait.mp4"))
        let times = result.times.map { $0 ?? -1 }
        #expect(times[0] == 0, "the first takes the keyframe")
        #expect(times[1] >= 1.0 - 0.01 && times[1] < 1.1 && times[2] >= 1.5 - 0.01 && times[2] < 1.6, "\(times)")
        #expect(Set(result.images.map(\.bytes)).count == 3)
        let sheet = try ThumbnailRenderer(options: ThumbnailOptions(
            box: Size(width: 200, height: 0), sheet: SheetLayout(columns: 2, rows: 2)))
            .render(path: TestFixtures.media("h264_portrait.mp4"))
        // The four tiles of the 2x2 sheet are four different pictures (the clip moves).
        let image = sheet.images[0]
        let (w, h) = (image.width / 2, image.height / 2)
        func tile(_ col: Int, _ row: Int) -> [UInt8] {
            (0..<h).flatMap { y -> ArraySlice<UInt8> in
                let start = ((row * h + y) * image.width + col * w) * 3
                return image.bytes[start..<start + w * 3]
            }
        }
        #expect(Set([tile(0, 0), tile(1, 0), tile(0, 1), tile(1, 1)]).count == 4)
    }

    @Test("a position at the start after a later one goes back to the first frame")
    func backToStart() throws {
        let result = try ThumbnailRenderer(options: ThumbnailOptions(positions: [.fraction(0.5), .seconds(0)],
                                                                     exact: true))
            .render(path: TestFixtures.media("h264_portrait.mp4"))
        #expect(result.times.map { $0 ?? -1 } == [1.0, 0.0])
    }

    @Test("a contact sheet is one image of columns x rows tiles")
    func sheet() throws {
        let options = ThumbnailOptions(box: Size(width: 300, height: 0), sheet: SheetLayout(columns: 3, rows: 2))
        let result = try ThumbnailRenderer(options: options).render(path: TestFixtures.media("hevc.mp4"))
        #expect(result.images.count == 1)
        #expect(result.images[0].size == Size(width: 300, height: 2 * 75))
    }

    @Test("timestamps on a sheet draw white digits on black in each tile's corner, and nothing else changes")
    func sheetTimestamps() throws {
        let layout = SheetLayout(columns: 2, rows: 1)
        let plain = try ThumbnailRenderer(options: ThumbnailOptions(box: Size(width: 320, height: 0), sheet: layout))
            .render(path: TestFixtures.media("vfr.mp4")).images[0]
        let labelled = try ThumbnailRenderer(options: ThumbnailOptions(
            box: Size(width: 320, height: 0), sheet: layout, timestamps: true))
            .render(path: TestFixtures.media("vfr.mp4")).images[0]
        #expect(plain.size == labelled.size)
        #expect(plain.bytes != labelled.bytes)
        // The second tile's label box starts at x = 160; its corner pixel is black, the top-right stays as it was.
        #expect(Array(labelled.pixel(x: 161, y: labelled.height - 1)) == [0, 0, 0])
        #expect(labelled.pixel(x: 319, y: 0) == plain.pixel(x: 319, y: 0))
        #expect(TimestampLabel.text(65.24) == "1:05.2")
    }

    @Test("a bad input is a typed error naming the item",
          arguments: ["empty.mp4", "random.mp4", "audio_only.m4a", "text.txt"])
    func badInput(name: String) throws {
        let path = TestFixtures.bad(name)
        #expect {
            _ = try ThumbnailRenderer().render(path: path)
        } throws: { error in
            (error as? MediaError)?.item.hasSuffix(name) == true
        }
    }
}
