// The baseline of Benchmarks/compare-thumbs.sh: a bare loop of the Media calls `videofeed thumbs --at 10%
// --size 320x320` makes for each file — open (stream information from the header), decoder (one thread), the
// keyframe at or before 10 % (with --exact: exact seek to 10 % and the first frame from there), convert upright
// into 320x320 RGB, JPEG quality 85, atomic write — on N threads pulling files from a shared counter, without the
// batch around it (no feed, no cards, no incremental plan, no time limit).
//
//   ThumbsLoop [--exact] OUT_DIR JOBS FILE...
import Dispatch
import Foundation
import Media
import Synchronization

var arguments = CommandLine.arguments
let exact = arguments.count > 1 && arguments[1] == "--exact"
if exact { arguments.remove(at: 1) }
guard arguments.count >= 4, let jobs = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: ThumbsLoop [--exact] OUT_DIR JOBS FILE...\n".utf8))
    exit(2)
}
let out = arguments[1]
let files = Array(arguments.dropFirst(3))
try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
let next = Atomic<Int>(0)
let failures = Atomic<Int>(0)
let group = DispatchGroup()
AllocatorTuning.keepLargeBlocks()
for worker in 0..<jobs {
    DispatchQueue(label: "ThumbsLoop.\(worker)").async(group: group) {
        let encoder = ImageEncoder(format: .jpeg, quality: 85)
        while true {
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < files.count else { return }
            let path = files[index]
            do {
                let file = try MediaFile(path: path, options: OpenOptions(streamInfo: .header))
                let decoder = try VideoDecoder(file: file, options: DecoderOptions(threadCount: 1))
                let target = (file.info.duration ?? 0) * 0.1
                let found: VideoFrame?
                if exact {
                    try decoder.seek(to: target, mode: .exact)
                    found = try decoder.nextFrame()
                } else {
                    found = try decoder.keyframe(at: target)
                }
                guard let frame = found else { throw MediaError(
                    .invalidData, operation: "thumbnail", item: path, message: "no frame") }
                let converter = FrameConverter(pixelFormat: .rgb24, fittingIn: Size(width: 320, height: 320),
                                               orientation: decoder.stream.orientation, scaling: .thumbnail)
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
