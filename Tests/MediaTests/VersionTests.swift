import Testing
@testable import Media

@Test func linksFFmpeg() {
    #expect(FFmpegVersion.libraries["libavformat"]?.isEmpty == false)
}
