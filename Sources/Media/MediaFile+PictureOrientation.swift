internal import CFFmpeg

extension MediaFile {
    /// Whether `stream` is a picture rather than a video: a cover (`AV_DISPOSITION_ATTACHED_PIC`) or the stream of
    /// an image file (an image demuxer: `image2`, `jpeg_pipe`, `png_pipe` …).
    func isPicture(_ stream: StreamInfo) -> Bool {
        stream.isAttachedPicture || info.container.hasSuffix("_pipe") || info.container.hasPrefix("image")
    }

    /// ``info`` with the orientation a picture is shown in. A photo's orientation is in its frames, not its stream:
    /// FFmpeg's JPEG decoder turns EXIF Orientation into a display matrix on each decoded frame and none on the
    /// stream. So where the primary video stream is a picture (an image file, a cover) without a display matrix of
    /// its own, its first frame is decoded and the frame's ``VideoFrame/orientation`` recorded on the stream:
    /// ``StreamInfo/orientation`` and ``StreamInfo/displaySize`` then describe the upright picture, as thumbnails,
    /// `dump --upright` and the player show it. Any other file's ``info`` is returned as it is, without decoding.
    ///
    /// Decodes from the file's current position: call it on a file opened for it, before anything else reads it
    /// (an image pipe cannot seek back).
    /// - Throws: ``MediaError`` as ``VideoDecoder/nextFrame()`` does when the picture cannot be decoded.
    public func infoWithPictureOrientation() throws -> MediaInfo {
        var result = info
        guard let stream = info.primaryVideoStream, isPicture(stream),
              vf_stream_display_matrix(self.stream(at: stream.index)) == nil,
              let position = result.streams.firstIndex(where: { $0.index == stream.index }) else { return result }
        let decoder = try VideoDecoder(file: self, options: DecoderOptions(threadCount: 1, stream: .index(stream.index)))
        guard let frame = try decoder.nextFrame() else { return result }
        result.streams[position].orientation = frame.orientation
        return result
    }
}
