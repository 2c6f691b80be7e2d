import EngineSupport

extension VideoDecoder {
    /// The frames ``forEachFrame(decodingAhead:_:)`` lets the decoding thread get ahead by default: enough to keep it
    /// busy while one frame is hashed or written, few enough that memory stays bounded (a 1080x1920 yuv420p frame is
    /// 3 MB).
    public static let defaultFramesAhead = 3

    /// Decodes the rest of the stream on a second thread while `body` gets each frame on the calling thread, in the
    /// order ``nextFrame()`` gives them, until the stream ends or `body` returns false. The decoding thread gets at
    /// most `ahead` frames ahead of `body`, so hashing, converting or writing a frame overlaps the decoding of the
    /// next ones (the ffmpeg CLI gets that overlap from its extra decoder thread) and memory stays bounded.
    ///
    /// Each frame is owned by whoever holds it: the decoding thread keeps no reference once it queued the frame.
    /// `body` must not use this decoder (or its ``file``) meanwhile: the decoding thread owns them until this method
    /// returns, which it does only after that thread ended.
    ///
    /// - Parameters:
    ///   - ahead: the most decoded frames waiting for `body` (at least 1).
    ///   - body: gets each frame; returns false to stop (the frames decoded ahead are then dropped).
    /// - Throws: what `body` throws, or what ``nextFrame()`` throws once `body` had every frame decoded before the
    ///   failure, as a loop over ``nextFrame()`` would.
    public func forEachFrame(decodingAhead ahead: Int = VideoDecoder.defaultFramesAhead,
                             _ body: (VideoFrame) throws -> Bool) throws {
        let lent = LentDecoder(decoder: self)
        // FFmpeg's messages are kept per thread: the decoding thread starts with this thread's (what opening the file
        // logged explains a later decoding error) and hands its own back, as if the loop had run here.
        let log = Locked(FFmpegLog.snapshot())
        defer { FFmpegLog.restore(log.get()) }
        try HandoffQueue<FrameInTransit>.run(capacity: max(1, ahead), threadName: "videofeed.decode") { queue in
            FFmpegLog.restore(log.get())
            defer { log.set(FFmpegLog.snapshot()) }
            while let frame = try lent.decoder.nextFrame() {
                guard queue.put(FrameInTransit(frame: frame)) else { return }
            }
        } consume: { item in
            try body(item.frame)
        }
    }
}

/// A decoded frame on its way from the decoding thread to `body` in ``VideoDecoder/forEachFrame(decodingAhead:_:)``.
///
/// `@unchecked Sendable` because the frame is moved, never shared: the decoding thread creates it, puts it in the
/// ``HandoffQueue`` and does not use it again; the queue's `NSCondition` orders that put before the take, after which
/// only the consuming thread uses it. The decoder may still hold references to the same picture buffers (as
/// reference pictures), which it only reads, and FFmpeg counts buffer references atomically, so releasing the frame
/// on either thread is safe.
private struct FrameInTransit: @unchecked Sendable {
    let frame: VideoFrame
}

/// The decoder lent to the decoding thread of ``VideoDecoder/forEachFrame(decodingAhead:_:)``.
///
/// `@unchecked Sendable` because the decoder is used by one thread at a time: the calling thread lends it and does not
/// touch it again until the decoding thread called the ``HandoffQueue``'s `finish()` after its last use of the
/// decoder, which the calling thread waits for under the queue's `NSCondition` before `forEachFrame` returns.
private struct LentDecoder: @unchecked Sendable {
    let decoder: VideoDecoder
}
