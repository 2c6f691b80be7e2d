import Foundation
import Testing
@testable import Feed

@Suite("Pexels listing")
struct PexelsParsingTests {
    @Test("the file that best fits the display is chosen; videos without a link or id are reported")
    func listing() throws {
        let parser = FeedDocumentParser(displaySize: .portraitFullHD, listedAt: referenceDate)
        let document = try parser.parse(Samples.data("pexels.json"))
        #expect(document.format == .pexels)
        #expect(document.page == 1 && document.totalResults == 8)
        #expect(document.nextPageURL?.absoluteString == "https://api.pexels.com/videos/popular/?page=2&per_page=4")
        #expect(document.items.map(\.publicID) == ["1448735", "857251"])
        try #require(document.items.count == 2 && document.skipped.count == 2)

        let portrait = document.items[0]
        #expect(portrait.source.absoluteString == "https://videos.pexels.com/1448735/hd_1080_1920.mp4")
        #expect(portrait.width == 1080 && portrait.height == 1920 && portrait.duration == 32)
        #expect(portrait.format == "mp4")
        #expect(portrait.createdAt == referenceDate)

        // Landscape on a portrait screen, letterboxed: 1280x720 is shown at 1080x608, enough; 640x360 is not.
        #expect(document.items[1].source.absoluteString == "https://videos.pexels.com/857251/hd_1280_720.mp4")

        #expect(document.skipped.map(\.index) == [2, 3])
        #expect(document.skipped[0].id == "999")
        #expect(document.skipped[0].reason == "none of the 1 video_files has a usable link")
        #expect(document.skipped[1].reason == "missing \"id\"")
    }

    @Test("a smaller display picks a smaller file")
    func smallDisplay() throws {
        let parser = FeedDocumentParser(displaySize: DisplaySize(width: 360, height: 640), listedAt: referenceDate)
        let document = try parser.parse(Samples.data("pexels.json"))
        try #require(document.items.count == 2)
        #expect(document.items[0].source.lastPathComponent == "sd_360_640.mp4")
        #expect(document.items[1].source.lastPathComponent == "sd_640_360.mp4")
    }
}

@Suite("Rendition choice")
struct VideoRenditionTests {
    func rendition(_ width: Int?, _ height: Int?, _ type: String = "video/mp4") -> VideoRendition {
        VideoRendition(
            link: URL(string: "https://v.example/\(width ?? 0)x\(height ?? 0)")!, width: width, height: height,
            fileType: type)
    }

    @Test("smallest file that needs no upscaling")
    func smallestCovering() {
        let all = [rendition(2160, 3840), rendition(720, 1280), rendition(1080, 1920), rendition(540, 960)]
        #expect(VideoRendition.bestFit(all, for: .portraitFullHD) == all[2])
    }

    @Test("largest file when every one would be upscaled")
    func largestWhenNoneCovers() {
        let all = [rendition(360, 640), rendition(720, 1280), rendition(540, 960)]
        #expect(VideoRendition.bestFit(all, for: .portraitFullHD) == all[1])
    }

    @Test("files without a size only when nothing has one; mp4 preferred")
    func unsized() {
        let hls = rendition(nil, nil, "video/hls")
        let mp4 = rendition(nil, nil)
        #expect(VideoRendition.bestFit([hls, rendition(360, 640)], for: .portraitFullHD)?.width == 360)
        #expect(VideoRendition.bestFit([hls, mp4], for: .portraitFullHD) == mp4)
        #expect(VideoRendition.bestFit([], for: .portraitFullHD) == nil)
    }
}
