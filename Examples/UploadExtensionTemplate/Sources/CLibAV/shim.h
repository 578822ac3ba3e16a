/* FFmpeg's headers, for Swift. Debian: libavcodec-dev, libavformat-dev, libavutil-dev. */
#ifndef CLIBAV_SHIM_H
#define CLIBAV_SHIM_H
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/opt.h>

/* AVERROR(EAGAIN) and AVERROR_EOF are macros Swift cannot import: here they are functions. */
static inline int CLibAV_AVERROR_EAGAIN(void) { return AVERROR(EAGAIN); }
static inline int CLibAV_AVERROR_EOF(void) { return AVERROR_EOF; }
#endif
