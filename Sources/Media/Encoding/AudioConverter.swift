package import CFFmpeg
import Foundation

/// Turns decoded audio of any layout, format and rate into the AAC encoder's frames: libswresample converts to
/// planar float stereo at the output rate (downmixing surround, upmixing mono), an `AVAudioFifo` cuts the result
/// into frames of the encoder's size, numbered by sample count from the first sample kept.
///
/// Output samples lie on a fixed grid of encoder frames, `gridOrigin + n·frameSize` (the audio stream's own start),
/// so that audio cut at any point — a segment made on demand — is made of the same frames as the whole stream: the
/// kept span starts at the first grid point at or after `start` seconds and ends at the first at or after `end`.
package final class AudioConverter {
    private var resampler: OpaquePointer? = nil
    private let fifo: OpaquePointer
    private let outputRate: Int32
    private var outputLayout = AVChannelLayout()
    private let item: String
    private let inputTimeBase: AVRational
    private let origin: Int64
    /// The first output sample kept and the first no longer kept (grid points), in 1/outputRate.
    package let startSample: Int64
    /// The grid's first point: where the stream's first frame starts, in 1/outputRate.
    package let gridStart: Int64
    private let endSample: Int64?
    /// The first grid point of the span's end: packets at or after it belong to the next span.
    package let cutSample: Int64?
    private let frameSize: Int
    /// Output samples produced so far (the pts of the next frame pulled, in 1/outputRate).
    private var nextPTS: Int64? = nil
    /// Samples still to drop before `start`.
    private var toDrop = 0
    private var ended = false

    /// - Parameters:
    ///   - origin: the container's start in the input time base: subtracted from every timestamp.
    ///   - gridOrigin: where the audio stream starts, in seconds from the container's start.
    ///   - frameSize: the encoder's frame size in samples.
    ///   - start: the first time kept, in seconds from the container's start.
    ///   - end: the first time no longer kept, or nil for all.
    package init(outputRate: Int, inputTimeBase: AVRational, origin: Int64, gridOrigin: Double, frameSize: Int,
         start: Double, end: Double?, item: String) throws {
        self.outputRate = Int32(outputRate)
        self.item = item
        self.inputTimeBase = inputTimeBase
        self.origin = origin
        let rate = Double(outputRate)
        let grid = Int64((min(max(0, gridOrigin), 1e9) * rate).rounded())
        gridStart = grid
        func gridPoint(_ seconds: Double) -> Int64 {
            let sample = Int64((min(max(seconds, 0), 1e9) * rate).rounded(.up))
            if sample <= grid { return grid }
            let n = (sample - grid + Int64(frameSize) - 1) / Int64(frameSize)
            return grid + n * Int64(frameSize)
        }
        self.frameSize = frameSize
        self.startSample = gridPoint(start)
        // One frame past the span's end is still encoded: AAC frames overlap, so the span's last packet needs the
        // samples after it to decode as the whole stream's does; the caller drops the packets at or after `cutSample`.
        self.cutSample = end.map(gridPoint)
        self.endSample = end.map { gridPoint($0) + Int64(frameSize) }
        av_channel_layout_default(&outputLayout, 2)
        guard let fifo = av_audio_fifo_alloc(AV_SAMPLE_FMT_FLTP, 2, 4096) else {
            throw MediaError(.limitExceeded, operation: "resample", item: item, message: "out of memory")
        }
        self.fifo = fifo
    }

    deinit {
        swr_free(&resampler)
        av_audio_fifo_free(fifo)
        av_channel_layout_uninit(&outputLayout)
    }

    /// Converts one decoded frame (nil: the input ended, flush the resampler) into the queue.
    package func push(_ input: UnsafeMutablePointer<AVFrame>?) throws {
        if ended { return }
        if let input {
            if input.pointee.ch_layout.nb_channels <= 0 || input.pointee.sample_rate <= 0 { return }
            if input.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC {
                let n = input.pointee.ch_layout.nb_channels
                av_channel_layout_uninit(&input.pointee.ch_layout)
                av_channel_layout_default(&input.pointee.ch_layout, n)
            }
            if resampler == nil {
                try open(for: input)
                let ts = input.pointee.best_effort_timestamp != vf_nopts_value()
                    ? input.pointee.best_effort_timestamp : input.pointee.pts
                let tb = Double(inputTimeBase.num) / Double(max(inputTimeBase.den, 1))
                let shifted = ts.subtractingReportingOverflow(origin)
                let seconds = Double(shifted.partialValue) * tb
                let first = ts == vf_nopts_value() || shifted.overflow || !seconds.isFinite || abs(seconds) > 1e9
                    ? startSample : Int64((seconds * Double(outputRate)).rounded())
                // Samples before the span are dropped; a stream that starts a little late (less than a frame) is
                // taken as starting on the grid, so every run numbers the same frames alike.
                toDrop = Int(max(0, startSample - first))
                nextPTS = first - startSample < Int64(frameSize) ? startSample : first
            }
        } else if resampler == nil {
            return
        }
        guard let out = Frame() else {
            throw MediaError(.limitExceeded, operation: "resample", item: item, message: "out of memory")
        }
        out.raw.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        out.raw.pointee.sample_rate = outputRate
        av_channel_layout_copy(&out.raw.pointee.ch_layout, &outputLayout)
        if let input, inputShape != Self.shape(of: input) {
            // The layout, format or rate changed midway: start a resampler for it, as the ffmpeg CLI reconfigures.
            swr_free(&resampler)
            try open(for: input)
        }
        let converted = swr_convert_frame(resampler, out.raw, input)
        guard converted >= 0 else { throw MediaError.ffmpeg(converted, operation: "resample", item: item) }
        var count = Int(out.raw.pointee.nb_samples)
        guard count > 0 else { return }
        var offset = 0
        if toDrop > 0 {
            let dropped = min(toDrop, count)
            toDrop -= dropped
            offset = dropped
            count -= dropped
            if count == 0 { return }
        }
        if let limit = endSample, let nextPTS {
            let queued = nextPTS + Int64(av_audio_fifo_size(fifo))
            count = Int(max(0, min(Int64(count), limit - queued)))
            if count == 0 {
                ended = true
                return
            }
        }
        var planes: [UnsafeMutableRawPointer?] = (0..<2).map { channel in
            out.raw.pointee.extended_data[channel].map {
                UnsafeMutableRawPointer($0) + offset * MemoryLayout<Float>.size
            }
        }
        let written = planes.withUnsafeMutableBufferPointer { buffer in
            av_audio_fifo_write(fifo, buffer.baseAddress, Int32(count))
        }
        guard written >= 0 else { throw MediaError.ffmpeg(written, operation: "resample", item: item) }
    }

    /// The next frame of exactly `size` samples; at the end (`flushing`), the last shorter one.
    package func pull(size: Int, flushing: Bool) throws -> Frame? {
        let available = Int(av_audio_fifo_size(fifo))
        guard available >= size || (flushing && available > 0) else { return nil }
        let count = min(size, available)
        guard let frame = Frame() else {
            throw MediaError(.limitExceeded, operation: "resample", item: item, message: "out of memory")
        }
        frame.raw.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        frame.raw.pointee.sample_rate = outputRate
        frame.raw.pointee.nb_samples = Int32(count)
        av_channel_layout_copy(&frame.raw.pointee.ch_layout, &outputLayout)
        let allocated = av_frame_get_buffer(frame.raw, 0)
        guard allocated >= 0 else { throw MediaError.ffmpeg(allocated, operation: "resample", item: item) }
        let read = frame.raw.pointee.extended_data.withMemoryRebound(to: UnsafeMutableRawPointer?.self,
                                                                     capacity: 2) { planes in
            av_audio_fifo_read(fifo, planes, Int32(count))
        }
        guard read >= 0 else { throw MediaError.ffmpeg(read, operation: "resample", item: item) }
        frame.raw.pointee.pts = nextPTS ?? 0
        nextPTS = (nextPTS ?? 0) + Int64(count)
        return frame
    }

    private func open(for input: UnsafeMutablePointer<AVFrame>) throws {
        var swr: OpaquePointer? = nil
        let result = swr_alloc_set_opts2(&swr, &outputLayout, AV_SAMPLE_FMT_FLTP, outputRate,
                                         &input.pointee.ch_layout, AVSampleFormat(rawValue: input.pointee.format),
                                         input.pointee.sample_rate, 0, nil)
        guard result >= 0, let swr else {
            throw MediaError.ffmpeg(result < 0 ? result : vf_averror(ENOMEM), operation: "resample", item: item)
        }
        let initialized = swr_init(swr)
        guard initialized >= 0 else {
            var owned: OpaquePointer? = swr
            swr_free(&owned)
            throw MediaError.ffmpeg(initialized, operation: "resample", item: item)
        }
        resampler = swr
        inputShape = Self.shape(of: input)
    }

    /// What the resampler was opened for: channels, sample format, rate.
    private var inputShape: [Int32] = []

    private static func shape(of frame: UnsafeMutablePointer<AVFrame>) -> [Int32] {
        [frame.pointee.ch_layout.nb_channels, frame.pointee.format, frame.pointee.sample_rate]
    }
}
