import Media

extension ThumbnailRenderer {
    /// The open file and its decoders while one item is rendered: seeks for each position, falling back to
    /// decoding from the start when the container cannot seek.
    struct Session {
        let file: MediaFile
        let stream: StreamInfo
        let still: Bool
        let duration: Double?
        let threads: Int
        let exact: Bool
        private var decoder: VideoDecoder?
        private var firstFrame: VideoFrame?
        /// Deinterlaces the pictures of an interlaced item (decided at its first frame).
        private var deinterlacer: Deinterlacer?
        /// The frame a decode from the start read past the frame it kept (timed `after`): that frame's neighbour.
        private var following: (after: Double, frame: VideoFrame)?
        /// Times of the keyframes already given out for a position.
        private var takenKeyframes = Set<Double>()

        init(file: MediaFile, stream: StreamInfo, still: Bool, duration: Double?, threads: Int,
             exact: Bool) {
            self.file = file
            self.stream = stream
            self.still = still
            self.duration = duration
            self.threads = threads
            self.exact = exact
        }

        /// The picture shown at `requested` seconds: ``decodedFrame(at:exact:)``, deinterlaced when the item is
        /// interlaced.
        mutating func frame(at requested: Double, exact: Bool? = nil) throws -> VideoFrame {
            try shown(decodedFrame(at: requested, exact: exact))
        }

        /// `frame` as a person sees it: an interlaced video's frame goes through ``Deinterlacer`` with the frame
        /// after it as its neighbour (bwdif on a frame alone sees no motion and keeps the comb).
        private mutating func shown(_ frame: VideoFrame) throws -> VideoFrame {
            guard !still else { return frame }
            let d = try openDecoder()
            let deinterlacer = self.deinterlacer ?? Deinterlacer(decoder: d)
            self.deinterlacer = deinterlacer
            // bwdif passes a frame that is not flagged interlaced through untouched: no need to decode a neighbour.
            guard deinterlacer.isActive(deciding: frame), frame.isInterlaced else { return frame }
            return try deinterlacer.deinterlace(frame, next: neighbour(of: frame, in: d))
        }

        /// The frame after `frame`, its temporal neighbour for bwdif: the one the last decode from the start already
        /// gave, else decoded again from `frame` (an exact seek to it), else — where seeking does not land on it (an
        /// MPEG-TS with one keyframe) — from the start. Nil at the end of the stream or when it cannot be had.
        private mutating func neighbour(of frame: VideoFrame, in d: VideoDecoder) throws -> VideoFrame? {
            guard let t = frame.time else { return nil }
            if let following, following.after == t { return following.frame }
            do {
                try d.seek(to: t, mode: .exact)
                if let again = try d.nextFrame(), again.time == t { return try d.nextFrame() }
                let restarted = try VideoDecoder(file: file, options: DecoderOptions(threadCount: threads))
                try? restarted.seek(to: 0, mode: .fast)
                decoder = restarted
                while let f = try restarted.nextFrame() {
                    if let time = f.time, time > t { return f }
                }
            } catch let error as MediaError where error.kind != .cancelled && error.kind != .timedOut {
                // Cannot decode it again: bwdif without a neighbour.
            }
            return nil
        }

        /// The keyframe at or before `target` seconds — unless an earlier position took that keyframe — or with
        /// `exact` the first frame at or after it; else the last frame.
        private mutating func decodedFrame(at requested: Double, exact: Bool? = nil) throws -> VideoFrame {
            let exact = exact ?? self.exact
            // Past the end means the last frames: aim just before the end.
            let target = duration.map { min(requested, max(0, $0 - 0.05)) } ?? requested
            if still || target <= 0 {
                // Decode the start once and keep it: image pipes (JPEG, PNG) cannot seek back at all.
                if let firstFrame { return firstFrame }
                let used = decoder != nil
                let d = try openDecoder()
                // Only a video gets here with a used decoder (a still caches its frame on the first call).
                if used { try? d.seek(to: 0, mode: .fast) }
                if let f = try d.nextFrame() {
                    firstFrame = f
                    takenKeyframes.insert(f.time ?? -1)
                    return f
                }
            } else {
                let d = try openDecoder()
                do {
                    if !exact, let f = try d.keyframe(at: target) {
                        if takenKeyframes.insert(f.time ?? -1).inserted { return f }
                        // Another position of this item already shows that keyframe (a long GOP, a contact sheet):
                        // take the exact frame instead, so that every position is a picture of its own.
                        try d.seek(to: target, mode: .exact)
                        if let f = try d.nextFrame() { return f }
                    } else if exact {
                        try d.seek(to: target, mode: .exact)
                        if let f = try d.nextFrame() { return f }
                    }
                } catch let error as MediaError where error.kind != .cancelled && error.kind != .timedOut {
                    // Not seekable: decode from the start instead.
                }
                // No frame at or after the target (a short GIF, a duration that overstates): decode from the start
                // and keep the last frame before the target.
                let restarted = try VideoDecoder(file: file, options: DecoderOptions(threadCount: threads))
                try? restarted.seek(to: 0, mode: .fast)
                decoder = restarted
                var last: VideoFrame?
                while let f = try restarted.nextFrame() {
                    if let t = f.time, t > target, let kept = last {
                        following = kept.time.map { (after: $0, frame: f) }
                        break
                    }
                    last = f
                }
                if let last { return last }
            }
            throw MediaError(.invalidData, operation: "thumbnail", item: file.item,
                             message: "no frame could be decoded")
        }

        /// `auto`: keyframe candidates first, exact frames at the same times when every keyframe is blank.
        mutating func chooseAuto(converter: FrameConverter) throws -> FrameChooser.Choice {
            let times = FrameChooser.sampleTimes(duration: duration ?? 0)
            let keyframes = try openDecoder()
            var candidates: [FrameChooser.Candidate] = []
            var seen = Set<Double>()
            for t in times {
                let found: VideoFrame?
                do { found = try keyframes.keyframe(at: t) } catch let e as MediaError
                    where e.kind != .cancelled && e.kind != .timedOut { break }
                guard let f = found else { continue }
                let key = f.time ?? -1
                if seen.contains(key) { continue }
                seen.insert(key)
                candidates.append(try candidate(try shown(f), converter))
            }
            if candidates.allSatisfy({ $0.stats.isBlank }) {
                for t in times {
                    let f = try frame(at: t, exact: true)
                    if let time = f.time, seen.contains(time) { continue }
                    seen.insert(f.time ?? -1)
                    candidates.append(try candidate(f, converter))
                }
            }
            guard let choice = FrameChooser.choose(candidates) else {
                throw MediaError(.invalidData, operation: "thumbnail", item: file.item,
                                 message: "no frame could be decoded")
            }
            return choice
        }

        private func candidate(_ f: VideoFrame, _ converter: FrameConverter) throws -> FrameChooser.Candidate {
            let image = try converter.convert(f)
            return FrameChooser.Candidate(image: image, time: f.time, stats: LumaStatistics(image))
        }

        private mutating func openDecoder() throws -> VideoDecoder {
            if let decoder { return decoder }
            let d = try VideoDecoder(file: file, options: DecoderOptions(threadCount: threads))
            decoder = d
            return d
        }
    }
}
