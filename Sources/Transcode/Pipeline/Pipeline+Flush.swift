internal import CFFmpeg
import Foundation
import Media

/// Flushing: at the end of the window (or the file), the decoders' last pictures, a still's repeated picture, the
/// graph's last frames and each encoder's delayed packets; the audio resampler and encoder likewise.
extension Pipeline {
    func finishVideo() throws {
        if graph == nil, let first = held, !plan.isStill {
            // One frame of a video falls in this window.
            try configure(first: first.raw, still: false)
            held = nil
            try filter(first.raw)
        }
        if graph == nil, let first = held {
            // A still (the plan's; a video's one frame is configured above): its picture shown for the still
            // duration.
            try configure(first: first.raw, still: true)
            let count = max(1, Int((settings.stillSeconds * Double(settings.stillFrameRate)).rounded()))
            let total = min(count, Int((window.end * Double(settings.stillFrameRate)).rounded()))
            let start = Int((window.start * Double(settings.stillFrameRate)).rounded())
            for i in start..<max(start, total) {
                guard let copy = first.clone() else { break }
                copy.raw.pointee.pts = Int64(i)
                try filter(copy.raw)
            }
            held = nil
        }
        guard let graph else {
            if let failure = video.failureWithoutFrames { throw failure }
            throw MediaError(.invalidData, operation: "decode", item: item, message: "no frame could be decoded")
        }
        try graph.push(nil)
        try drainGraph()
        try eachOutput { try $0.finishVideo() }
        videoDone = true
    }

    func finishAudio() throws {
        guard !audioDone || (converter != nil && audioEncoder != nil && !finishedAudio) else { return }
        guard let converter, let audioEncoder, !finishedAudio else {
            audioDone = true
            return
        }
        finishedAudio = true
        try converter.push(nil)
        while let chunk = try converter.pull(size: audioEncoder.frameSize, flushing: true) {
            try audioPackets(audioEncoder.encode(chunk.raw))
        }
        try audioPackets(audioEncoder.encode(nil))
        audioDone = true
        if outputs.isEmpty { return }
        try eachOutput { try $0.finishAudio() }
    }
}
