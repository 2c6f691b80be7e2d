package import CFFmpeg
import Foundation

/// A libavfilter graph with one video input (`buffer`) and one or more outputs (`buffersink`), built from a filter
/// description in the ffmpeg CLI's `-filter_complex` syntax: the input is labelled `[in]`, outputs `[out0]`,
/// `[out1]` … Owns the `AVFilterGraph` (and with it every filter) and frees it on deinit.
package final class FilterGraph {
    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sinks: [UnsafeMutablePointer<AVFilterContext>]
    private let item: String

    /// The description the graph was built from, for errors and logs.
    package let description: String

    /// - Parameters:
    ///   - input: the first frame the graph will see: its size, pixel format and sample aspect ratio configure the
    ///     input.
    ///   - timeBase: the time base of the frames pushed.
    ///   - outputs: how many outputs the description labels (`[out0]` …).
    /// - Throws: ``MediaError`` `invalidArgument` with libavfilter's message when the description does not parse or
    ///   link.
    package init(_ description: String, input: UnsafeMutablePointer<AVFrame>, timeBase: AVRational, frameRate: AVRational,
         outputs: Int, threads: Int, item: String) throws {
        self.description = description
        self.item = item
        FFmpegLog.clear()
        guard var graph = avfilter_graph_alloc() else {
            throw MediaError(.limitExceeded, operation: "filter", item: item, message: "out of memory")
        }
        graph.pointee.nb_threads = Int32(min(max(0, threads), 64))
        var owned: UnsafeMutablePointer<AVFilterGraph>? = graph
        func fail(_ code: Int32, _ what: String) -> MediaError {
            avfilter_graph_free(&owned)
            let detail = FFmpegLog.lastError.map { ": \($0)" } ?? ""
            return MediaError(.invalidArgument, operation: "filter", item: item,
                              message: "\(what) '\(description)': \(MediaError.ffmpegMessage(code))\(detail)",
                              code: code)
        }
        let sar = input.pointee.sample_aspect_ratio
        let args = "video_size=\(input.pointee.width)x\(input.pointee.height):pix_fmt=\(input.pointee.format)"
            + ":time_base=\(timeBase.num)/\(max(timeBase.den, 1))"
            + ":pixel_aspect=\(sar.num > 0 && sar.den > 0 ? sar.num : 1)/\(sar.num > 0 && sar.den > 0 ? sar.den : 1)"
            + (frameRate.num > 0 && frameRate.den > 0 ? ":frame_rate=\(frameRate.num)/\(frameRate.den)" : "")
        var src: UnsafeMutablePointer<AVFilterContext>? = nil
        var made = avfilter_graph_create_filter(&src, avfilter_get_by_name("buffer"), "in", args, nil, graph)
        guard made >= 0, let src else { throw fail(made, "cannot create the input of") }
        var sinkList: [UnsafeMutablePointer<AVFilterContext>] = []
        for i in 0..<outputs {
            var sink: UnsafeMutablePointer<AVFilterContext>? = nil
            made = avfilter_graph_create_filter(&sink, avfilter_get_by_name("buffersink"), "out\(i)", nil, nil, graph)
            guard made >= 0, let sink else { throw fail(made, "cannot create an output of") }
            sinkList.append(sink)
        }
        // The open ends of the description: its [in] is fed by our source, each [outN] feeds our sink N.
        var inputs: UnsafeMutablePointer<AVFilterInOut>? = nil
        for (i, sink) in sinkList.enumerated().reversed() {
            guard let node = avfilter_inout_alloc() else {
                avfilter_inout_free(&inputs)
                throw fail(vf_averror(ENOMEM), "out of memory for")
            }
            node.pointee.name = av_strdup("out\(i)")
            node.pointee.filter_ctx = sink
            node.pointee.pad_idx = 0
            node.pointee.next = inputs
            inputs = node
        }
        var outputsList: UnsafeMutablePointer<AVFilterInOut>? = avfilter_inout_alloc()
        guard let head = outputsList else {
            avfilter_inout_free(&inputs)
            throw fail(vf_averror(ENOMEM), "out of memory for")
        }
        head.pointee.name = av_strdup("in")
        head.pointee.filter_ctx = src
        head.pointee.pad_idx = 0
        head.pointee.next = nil
        made = avfilter_graph_parse_ptr(graph, description, &inputs, &outputsList, nil)
        avfilter_inout_free(&inputs)
        avfilter_inout_free(&outputsList)
        guard made >= 0 else { throw fail(made, "cannot parse") }
        made = avfilter_graph_config(graph, nil)
        guard made >= 0 else { throw fail(made, "cannot configure") }
        graph = owned!
        self.graph = graph
        self.source = src
        self.sinks = sinkList
    }

    deinit {
        avfilter_graph_free(&graph)
    }

    package var outputCount: Int { sinks.count }

    /// What a graph's input is configured for: size, pixel format, sample aspect ratio. A frame of another shape
    /// needs another graph.
    package static func shape(_ frame: UnsafePointer<AVFrame>) -> [Int32] {
        [frame.pointee.width, frame.pointee.height, frame.pointee.format, frame.pointee.sample_aspect_ratio.num,
         frame.pointee.sample_aspect_ratio.den]
    }

    /// The time base of output `index`'s frames.
    package func timeBase(of index: Int) -> AVRational { av_buffersink_get_time_base(sinks[index]) }
    /// The frame rate of output `index` (0/1 when variable or unknown).
    package func frameRate(of index: Int) -> AVRational { av_buffersink_get_frame_rate(sinks[index]) }
    /// The size of output `index`'s pictures.
    package func size(of index: Int) -> (width: Int, height: Int) {
        (Int(av_buffersink_get_w(sinks[index])), Int(av_buffersink_get_h(sinks[index])))
    }

    /// Pushes a frame (nil: the input ended). The graph keeps its own reference; the caller keeps `frame`.
    package func push(_ frame: UnsafeMutablePointer<AVFrame>?) throws {
        let result = av_buffersrc_add_frame_flags(source, frame, Int32(vf_buffersrc_flag_keep_ref()))
        if result < 0 && result != vf_averror_eof() {
            throw MediaError.ffmpeg(result, operation: "filter", item: item)
        }
    }

    /// The next frame of output `index`, if it has one.
    package func pull(_ index: Int) throws -> Pull<Frame> {
        guard let frame = Frame() else {
            throw MediaError(.limitExceeded, operation: "filter", item: item, message: "out of memory")
        }
        let result = av_buffersink_get_frame(sinks[index], frame.raw)
        if result >= 0 { return .output(frame) }
        if result == vf_averror_eagain() { return .needsInput }
        if result == vf_averror_eof() { return .ended }
        throw MediaError.ffmpeg(result, operation: "filter", item: item)
    }
}
