import Media
import Testing
import Transcode

/// Every file of an item's folder is named in one place: its path and its parse are inverses.
@Suite struct ItemFileTests {
    static let files: [ItemFile] = [
        .manifest, .poster, .preview, .previewWebP, .masterPlaylist, .mp4(rendition: "720x1280"),
        .mp4(rendition: "720x1280-av1"), .initialization(rendition: "540x960"), .segment(rendition: "360x640", index: 0),
        .segment(rendition: "360x640-av1", index: 123_456_789), .mediaPlaylist(rendition: "720x1280"),
    ]

    @Test func thePathsAreTheBatchLayoutAndParseBack() {
        #expect(Self.files.map(\.path) == [
            "manifest.json", "poster.jpg", "preview.mp4", "preview.webp", "master.m3u8", "720x1280.mp4",
            "720x1280-av1.mp4", "540x960/init.mp4", "360x640/seg-0.m4s", "360x640-av1/seg-123456789.m4s",
            "720x1280/index.m3u8",
        ])
        for file in Self.files {
            #expect(ItemFile(path: file.path) == file, "\(file.path)")
            #expect(file.key(in: "a/b.0123abcd") == "a/b.0123abcd/" + file.path)
        }
        #expect(ItemFile.segment(rendition: "360x640", index: 7).name == "seg-7.m4s")
        #expect(ItemFile.initialization(rendition: "360x640").name == "init.mp4")
        #expect(ItemFile.mediaPlaylist(rendition: "x").rendition == "x" && ItemFile.poster.rendition == nil)
        #expect(Self.files.filter { !$0.isServed } == [.manifest])
    }

    @Test func otherPathsAreNoFile() {
        for path in ["", "poster.png", ".mp4", "a/b/seg-0.m4s", "/init.mp4", "../init.mp4", "./seg-1.m4s",
                     "720x1280/seg-00.m4s", "720x1280/seg-+1.m4s", "720x1280/seg--1.m4s", "720x1280/seg-x.m4s",
                     "720x1280/seg-.m4s", "720x1280/seg-1234567890.m4s", "720x1280/seg-1.mp4", "720x1280/poster.jpg",
                     "720x1280/", "720x1280/seg-١.m4s"] {
            #expect(ItemFile(path: path) == nil, "\(path)")
        }
    }
}
