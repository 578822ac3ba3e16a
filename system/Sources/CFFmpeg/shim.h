#ifndef CFFMPEG_SHIM_H
#define CFFMPEG_SHIM_H
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/opt.h>

/* Macros Swift cannot import, as functions. */
static inline int CFFmpeg_AVERROR(int posixError) { return AVERROR(posixError); }
static inline int CFFmpeg_AVERROR_EOF(void) { return AVERROR_EOF; }
static inline int64_t CFFmpeg_AV_NOPTS_VALUE(void) { return AV_NOPTS_VALUE; }
static inline int CFFmpeg_errorString(int code, char *buffer, size_t size) {
    return av_strerror(code, buffer, size);
}
#endif
