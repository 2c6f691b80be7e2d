import Feed
import Foundation
import Media

/// Everything `videofeed dump` (and the demo) needs to dump one input.
struct DumpRequest {
    var input: String
    var format: DumpFormat
    var out: String? = nil
    var start: Double? = nil
    var seekMode: SeekMode = .exact
    var maxFrames: Int? = nil
    var every: Int = 1
    var keyframesOnly = false
    var box: Size? = nil
    var pixelFormat: PixelFormat? = nil
    var upright = false
    var quality = 90
    var threads: Int? = nil
    var fileStem = "frame-"
    var openOptions = OpenOptions()
}

/// The decode → (convert) → write loop behind `videofeed dump`.
enum FrameDumper {
    /// Dumps frames; returns how many were written. Every file is written atomically.
    static func run(_ request: DumpRequest) throws -> Int {
        let file = try MediaFile(path: request.input, options: request.openOptions)
        let converting = request.box != nil || request.pixelFormat != nil || request.upright
        var options = DecoderOptions(keyframesOnly: request.keyframesOnly)
        if let threads = request.threads { options.threadCount = threads }
        // framemd5 of unconverted frames hashes the stream `ffmpeg -map 0:v:0` picks.
        options.stream = request.format == .framemd5 && !converting ? .firstVideo : .primary
        let decoder = try VideoDecoder(file: file, options: options)
        if let start = request.start { try decoder.seek(to: start, mode: request.seekMode) }

        let needsImage = converting || request.format.imageFormat != nil
        let converter = needsImage ? FrameConverter(
            pixelFormat: request.pixelFormat ?? .rgb24, fittingIn: request.box, upright: request.upright) : nil
        // --upright shows pictures as a player does, deinterlaced too; hashes and raw pixels stay what the decoder
        // gave, as ffmpeg's framemd5 does.
        let deinterlacer = request.upright && request.format != .framemd5 && request.format != .raw
            ? Deinterlacer(decoder: decoder) : nil
        let encoder = request.format.imageFormat.map { ImageEncoder(format: $0, quality: request.quality) }

        var sink = try Sink(request: request, decoder: decoder)
        var decodedIndex = 0
        var written = 0
        func handle(_ frame: VideoFrame) throws -> Bool {
            defer { decodedIndex += 1 }
            guard decodedIndex % request.every == 0 else { return true }
            let image = try converter?.convert(frame)
            try sink.write(frame: frame, image: image, encoder: encoder, number: written + 1)
            written += 1
            if let max = request.maxFrames, written >= max { return false }
            return true
        }
        if let deinterlacer {
            // Deinterlacing looks at the frame after each one: it pulls from the decoder itself.
            while let frame = try deinterlacer.nextFrame() {
                if try !handle(frame) { break }
            }
        } else {
            // The decoder runs on its own thread a few frames ahead, so converting, hashing and writing a frame here
            // overlaps the decoding of the next ones (the ffmpeg CLI gets the same overlap from its extra decoder
            // thread).
            try decoder.forEachFrame(handle)
        }
        try sink.finish()
        if written == 0 {
            throw MediaError(.invalidData, operation: "dump", item: file.item, message: "no frame to write")
        }
        return written
    }

    /// Where frames go: a folder of files, or framemd5 text to stdout or a file.
    struct Sink {
        let request: DumpRequest
        let folder: String?
        var md5: FrameMD5Writer?
        var md5Text = ""
        let md5ToStdout: Bool

        init(request: DumpRequest, decoder: VideoDecoder) throws {
            self.request = request
            if request.format == .framemd5 {
                md5 = FrameMD5Writer(decoder: decoder)
                md5ToStdout = request.out == nil || request.out == "-"
                folder = nil
            } else if request.format == .null {
                md5ToStdout = false
                folder = nil
            } else {
                md5ToStdout = false
                let dir = request.out ?? "frames"
                do {
                    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                } catch {
                    throw MediaError(.io, operation: "create folder", item: dir, message: SystemErrorText.reason(error))
                }
                folder = dir
            }
        }

        mutating func write(frame: VideoFrame, image: Image?, encoder: ImageEncoder?, number: Int) throws {
            if var writer = md5 {
                let text = image.map { writer.lines(for: $0, time: frame.time) } ?? writer.lines(for: frame)
                md5 = writer
                if md5ToStdout { Console.out(text) } else { md5Text += text }
                return
            }
            guard let folder else { return }
            let ext = request.format == .raw ? "raw" : (encoder?.format.fileExtension ?? "bin")
            let path = (folder as NSString).appendingPathComponent(
                request.fileStem + String(format: "%06d", number) + "." + ext)
            if let encoder, let image {
                try encoder.write(image, to: path)
            } else {
                try AtomicFile.write(image?.bytes ?? frame.packedBytes(), to: path)
            }
        }

        func finish() throws {
            if md5 != nil, !md5ToStdout, let out = request.out {
                try AtomicFile.write(Array(md5Text.utf8), to: out)
            }
        }
    }
}
