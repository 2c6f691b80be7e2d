// The baseline of Benchmarks/compare-thumbs.sh: a bare loop of the Media calls `videofeed thumbs --at 10%
// --size 320x320` makes for each file — open, decoder (one thread), exact seek to 10 %, one frame, convert upright
// into 320x320 RGB, JPEG quality 85, atomic write — on N threads pulling files from a shared counter, without the
// batch around it (no feed, no cards, no incremental plan, no time limit).
//
//   ThumbsLoop OUT_DIR JOBS FILE...
import Dispatch
import Foundation
import Media
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 4, let jobs = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: ThumbsLoop OUT_DIR JOBS FILE...\n".utf8))
    exit(2)
}
let out = arguments[1]
let files = Array(arguments.dropFirst(3))
try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
let next = Atomic<Int>(0)
let failures = Atomic<Int>(0)
let group = DispatchGroup()
for worker in 0..<jobs {
    DispatchQueue(label: "ThumbsLoop.\(worker)").async(group: group) {
        let encoder = ImageEncoder(format: .jpeg, quality: 85)
        while true {
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < files.count else { return }
            let path = files[index]
            do {
                let file = try MediaFile(path: path)
                let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: 1))
                try decoder.seek(to: (file.info.duration ?? 0) * 0.1, mode: .exact)
                guard let frame = try decoder.nextFrame() else { throw MediaError(
                    .invalidData, operation: "thumbnail", item: path, message: "no frame") }
                let converter = FrameConverter(pixelFormat: .rgb24, fittingIn: Size(width: 320, height: 320),
                                               orientation: decoder.stream.orientation)
                let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
                try encoder.write(try converter.convert(frame), to: "\(out)/\(name).jpg")
            } catch {
                failures.wrappingAdd(1, ordering: .relaxed)
                FileHandle.standardError.write(Data("\(error)\n".utf8))
            }
        }
    }
}
group.wait()
exit(failures.load(ordering: .relaxed) == 0 ? 0 : 1)
