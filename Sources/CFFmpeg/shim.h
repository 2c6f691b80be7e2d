// The C side of VideoFeedEngine's FFmpeg binding.
//
// Swift cannot import function-like or computed C macros, so every macro the Media module needs is re-exposed here as
// a `static inline` function or constant. Deprecated FFmpeg calls that still are the right call on FFmpeg 5.1 are
// wrapped here with the deprecation warning silenced, so the Swift side builds without warnings.
// This module is an implementation detail: it is only ever imported with `internal import`.
#ifndef VIDEOFEED_CFFMPEG_SHIM_H
#define VIDEOFEED_CFFMPEG_SHIM_H

#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <libavutil/avutil.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/md5.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/dict.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/mathematics.h>
#include <libavutil/cpu.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersrc.h>
#include <libavfilter/buffersink.h>
#include <libswresample/swresample.h>

// MARK: - Error codes

static inline int vf_averror(int posix_errno) { return AVERROR(posix_errno); }
static inline int vf_averror_eof(void) { return AVERROR_EOF; }
static inline int vf_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int vf_averror_exit(void) { return AVERROR_EXIT; }
static inline int vf_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int vf_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int vf_averror_encoder_not_found(void) { return AVERROR_ENCODER_NOT_FOUND; }
static inline int vf_averror_demuxer_not_found(void) { return AVERROR_DEMUXER_NOT_FOUND; }
static inline int vf_averror_protocol_not_found(void) { return AVERROR_PROTOCOL_NOT_FOUND; }
static inline int vf_averror_stream_not_found(void) { return AVERROR_STREAM_NOT_FOUND; }
static inline int vf_averror_patchwelcome(void) { return AVERROR_PATCHWELCOME; }
static inline int vf_averror_http_not_found(void) { return AVERROR_HTTP_NOT_FOUND; }
static inline int vf_averror_http_forbidden(void) { return AVERROR_HTTP_FORBIDDEN; }
static inline int vf_averror_http_unauthorized(void) { return AVERROR_HTTP_UNAUTHORIZED; }
static inline int vf_averror_http_bad_request(void) { return AVERROR_HTTP_BAD_REQUEST; }
static inline int vf_averror_http_other_4xx(void) { return AVERROR_HTTP_OTHER_4XX; }
static inline int vf_averror_http_server_error(void) { return AVERROR_HTTP_SERVER_ERROR; }

// MARK: - Constants

static inline int64_t vf_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int vf_time_base(void) { return AV_TIME_BASE; }
static inline int vf_error_max_string_size(void) { return AV_ERROR_MAX_STRING_SIZE; }
static inline int vf_pkt_flag_key(void) { return AV_PKT_FLAG_KEY; }
static inline int vf_disposition_attached_pic(void) { return AV_DISPOSITION_ATTACHED_PIC; }
static inline int vf_fmt_nofile(void) { return AVFMT_NOFILE; }
static inline int vf_seek_flag_backward(void) { return AVSEEK_FLAG_BACKWARD; }
static inline int vf_seek_flag_byte(void) { return AVSEEK_FLAG_BYTE; }
static inline int vf_seek_flag_any(void) { return AVSEEK_FLAG_ANY; }
static inline int vf_fmt_no_byte_seek(void) { return AVFMT_NO_BYTE_SEEK; }
static inline int vf_avio_seekable_normal(void) { return AVIO_SEEKABLE_NORMAL; }
static inline int vf_index_keyframe(void) { return AVINDEX_KEYFRAME; }
static inline int vf_pkt_flag_discard(void) { return AV_PKT_FLAG_DISCARD; }
static inline int vf_codec_flag_qscale(void) { return AV_CODEC_FLAG_QSCALE; }
static inline int vf_lambda(void) { return FF_QP2LAMBDA; }
static inline int vf_avseek_size(void) { return AVSEEK_SIZE; }
static inline int vf_avseek_force(void) { return AVSEEK_FORCE; }
static inline int vf_avio_flag_read(void) { return AVIO_FLAG_READ; }
static inline int vf_avio_flag_write(void) { return AVIO_FLAG_WRITE; }
static inline int vf_codec_flag_global_header(void) { return AV_CODEC_FLAG_GLOBAL_HEADER; }
static inline int vf_fmt_globalheader(void) { return AVFMT_GLOBALHEADER; }
static inline int vf_buffersrc_flag_keep_ref(void) { return AV_BUFFERSRC_FLAG_KEEP_REF; }
static inline int vf_opt_search_children(void) { return AV_OPT_SEARCH_CHILDREN; }
static inline AVRational vf_time_base_q(void) { return AV_TIME_BASE_Q; }

/// Whether a decoded frame is flagged interlaced (`interlaced_frame` on FFmpeg 5.1, `AV_FRAME_FLAG_INTERLACED` later).
static inline int vf_frame_is_interlaced(const AVFrame *frame) {
#ifdef AV_FRAME_FLAG_INTERLACED
    return (frame->flags & AV_FRAME_FLAG_INTERLACED) != 0;
#else
    return frame->interlaced_frame != 0;
#endif
}

/// A decoded frame's display matrix (9 × int32, 16.16 fixed point), or NULL: the JPEG decoder attaches one for an
/// EXIF Orientation other than 1. Borrowed: valid while the frame holds its side data.
static inline const int32_t *vf_frame_display_matrix(const AVFrame *frame) {
    const AVFrameSideData *side = av_frame_get_side_data(frame, AV_FRAME_DATA_DISPLAYMATRIX);
    if (!side || side->size < 9 * sizeof(int32_t)) return NULL;
    return (const int32_t *)side->data;
}

// MARK: - Calls deprecated after 5.1, kept behind one wrapper each

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/// The stream's display matrix (9 × int32, 16.16 fixed point), or NULL. Borrowed: valid while the stream lives.
static inline const int32_t *vf_stream_display_matrix(const AVStream *stream) {
    size_t size = 0;
    const uint8_t *data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (!data || size < 9 * sizeof(int32_t)) return NULL;
    return (const int32_t *)data;
}

/// Whether a decoded frame is a keyframe (`key_frame` on FFmpeg 5.1, `AV_FRAME_FLAG_KEY` later).
static inline int vf_frame_is_key(const AVFrame *frame) {
#ifdef AV_FRAME_FLAG_KEY
    return (frame->flags & AV_FRAME_FLAG_KEY) != 0;
#else
    return frame->key_frame != 0;
#endif
}

/// The frame's duration in its stream's time base (`pkt_duration` on 5.1, `duration` later), or 0.
static inline int64_t vf_frame_duration(const AVFrame *frame) {
#if LIBAVUTIL_VERSION_MAJOR >= 58
    return frame->duration;
#else
    return frame->pkt_duration;
#endif
}

#pragma GCC diagnostic pop

// MARK: - Interrupt callback

/// Installs `callback(opaque)` as the format context's interrupt callback. Must be set before
/// `avformat_open_input`, on a context from `avformat_alloc_context`.
static inline void vf_set_interrupt_callback(AVFormatContext *ctx, int (*callback)(void *), void *opaque) {
    ctx->interrupt_callback.callback = callback;
    ctx->interrupt_callback.opaque = opaque;
}

// MARK: - Logging

/// Formats one `av_log` message (without FFmpeg's "[ctx @ 0x…]" prefix) into `buffer`.
static inline int vf_format_log(char *buffer, int size, const char *format, va_list args) {
    return vsnprintf(buffer, (size_t)size, format, args);
}

#endif
