import Foundation
import Media

/// One fuzz input through the path a thumbnail takes from untrusted bytes: open from memory (probe), decode the first
/// frames, convert them upright into a small box, encode an image. Every failure must be a ``MediaError``; a crash, a
/// leak or a sanitizer report is a finding.
///
/// The input's length picks the open mode, so both the full probe and the header-only path are exercised.
func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    guard !bytes.isEmpty else { return }
    var options = OpenOptions(streamInfo: bytes.count % 2 == 0 ? .probe : .header)
    options.maxDimension = 4096
    options.maxPixelCount = 2048 * 2048
    options.maxDecodedFrames = 16
    options.maxDecodedBytes = 64 << 20
    options.itemTimeLimit = 10
    do {
        let file = try MediaFile(data: Data(bytes), name: "fuzz-input", options: options)
        let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: 1))
        let converter = FrameConverter(pixelFormat: .rgb24, fittingIn: Size(width: 64, height: 64),
                                       orientation: decoder.stream.orientation)
        let encoder = ImageEncoder(format: .png)
        var frames = 0
        while frames < 3, let frame = try decoder.nextFrame() {
            let image = try converter.convert(frame)
            _ = try encoder.encode(image)
            frames += 1
        }
    } catch is MediaError {
        // The expected outcome for most inputs.
    } catch {
        fatalError("not a MediaError: \(error)")
    }
}
