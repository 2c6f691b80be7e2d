import Media
import TestSupport
import Testing

/// `StreamInfoMode.header` must describe a file exactly as the full probe does, and decode the same pictures.
@Suite struct HeaderInfoTests {
    static let names = TestFixtures.mediaNames

    @Test("header mode describes every fixture like the full probe and decodes the same first frame", arguments: names)
    func sameAsProbe(name: String) throws {
        let path = TestFixtures.media(name)
        let probed = try MediaFile(path: path)
        let fast = try MediaFile(path: path, options: OpenOptions(streamInfo: .header))
        #expect(fast.info.container == probed.info.container)
        #expect(fast.info.startTime == probed.info.startTime)
        #expect(fast.info.duration == probed.info.duration)
        #expect(fast.info.streams.count == probed.info.streams.count)
        for (a, b) in zip(fast.info.streams, probed.info.streams) {
            #expect(a.kind == b.kind && a.codec == b.codec, "stream \(b.index)")
            #expect(a.width == b.width && a.height == b.height, "stream \(b.index)")
            #expect(a.pixelFormat == b.pixelFormat && a.bitDepth == b.bitDepth, "stream \(b.index)")
            #expect(a.averageFrameRate == b.averageFrameRate && a.timeBase == b.timeBase, "stream \(b.index)")
            #expect(a.orientation == b.orientation && a.isAttachedPicture == b.isAttachedPicture)
            #expect(a.sampleAspectRatio == b.sampleAspectRatio && a.displayAspectRatio == b.displayAspectRatio,
                    "stream \(b.index)")
            #expect(a.colorPrimaries == b.colorPrimaries && a.colorTransfer == b.colorTransfer
                    && a.colorSpace == b.colorSpace && a.isHDR == b.isHDR, "stream \(b.index)")
            #expect(a.duration == b.duration && a.frameCount == b.frameCount, "stream \(b.index)")
            #expect(a.sampleRate == b.sampleRate && a.channels == b.channels, "stream \(b.index)")
        }
        guard probed.info.primaryVideoStream != nil else { return }
        let first = try #require(try VideoDecoder(file: probed, options: DecoderOptions(threadCount: 1)).nextFrame())
        let second = try #require(try VideoDecoder(file: fast, options: DecoderOptions(threadCount: 1)).nextFrame())
        #expect(first.time == second.time)
        #expect(first.packedMD5() == second.packedMD5())
    }

    @Test("a file decoded to its end in header mode gives every frame the full probe gives")
    func wholeFile() throws {
        let path = TestFixtures.media("h264_portrait.mp4")
        func hashes(_ mode: StreamInfoMode) throws -> [String] {
            let decoder = try VideoDecoder(file: MediaFile(path: path, options: OpenOptions(streamInfo: mode)),
                                           options: DecoderOptions(threadCount: 1))
            var all: [String] = []
            while let frame = try decoder.nextFrame() { all.append(frame.packedMD5()) }
            return all
        }
        let probed = try hashes(.probe)
        #expect(probed.count == 60)
        #expect(try hashes(.header) == probed)
    }
}
