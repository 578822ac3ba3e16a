#ifndef CPIPEWIRE_SHIM_H_INCLUDED
#define CPIPEWIRE_SHIM_H_INCLUDED
// What Swift cannot call in libpipewire/libspa: the loop's inline methods, the SPA pod
// builders (macros over varargs), format parsing, and the stream's C callback table.
#include <stdint.h>
#include <pipewire/pipewire.h>

/// Runs one iteration of `loop` (enter, iterate, leave): dispatches what is ready, waiting
/// at most `timeout_ms`. Returns the number of dispatched sources or a negative errno.
int CPW_loop_iterate(struct pw_loop *loop, int timeout_ms);

/// A raw video EnumFormat param accepting any of `formats` (SPA_VIDEO_FORMAT_*, most
/// preferred first), any size up to 8192x8192 (preferring width x height) and a maximum
/// frame rate up to `max_fps`. Without `linear_dmabuf` it has no modifier property: shared
/// memory. With it, it asks for a DMA-BUF with the linear modifier only (rows of pixels,
/// as in memory; a tiled GPU layout cannot be read without that GPU).
/// Built into `buffer`; NULL when it does not fit.
const struct spa_pod *CPW_build_enum_format(uint8_t *buffer, uint32_t size, const uint32_t *formats, uint32_t count,
                                            uint32_t width, uint32_t height, uint32_t max_fps, int linear_dmabuf);

/// DRM_FORMAT_MOD_LINEAR (libdrm's drm_fourcc.h): a DMA-BUF laid out as rows of pixels.
#define CPW_MODIFIER_LINEAR 0ULL

/// The Buffers param (data types as a bit mask of 1 << SPA_DATA_*; `buffers` asked for, any
/// from 2 to 16 taken) and the Meta params this consumer reads (header, video transform,
/// damage, cursor). Writes up to `max` pods into `params`; returns how many.
uint32_t CPW_build_buffer_params(uint8_t *buffer, uint32_t size, uint32_t data_types, int32_t buffers,
                                 const struct spa_pod **params, uint32_t max);

typedef struct {
    uint32_t format;        // SPA_VIDEO_FORMAT_*
    uint32_t width, height;
    uint32_t max_fps_num, max_fps_den;
    int has_modifier;       // a DMA-BUF format
    int modifier_fixed;     // the producer has chosen its modifier (else it still offers several)
    uint64_t modifier;      // the chosen modifier, when fixed
} CPW_video_format;

/// Parses a negotiated Format param; 0 on success, negative when it is not raw video.
int CPW_parse_video_format(const struct spa_pod *param, CPW_video_format *out);

typedef struct {
    const uint8_t *data;    // mapped first plane at the chunk's offset; NULL when not mapped
    uint32_t size;          // bytes of valid data in the chunk
    int32_t stride;
    uint32_t type;          // SPA_DATA_*
    int corrupted;          // chunk or header says the content is not valid
    int64_t pts;            // the header's presentation time (the producer's clock, ns); -1 when none
    uint32_t transform;     // SPA_META_TRANSFORMATION_*: how the picture was turned in the buffer
} CPW_frame_view;

/// Looks into a dequeued buffer's first plane. A DMA-BUF is mapped for reading when the
/// stream adds the buffer (PipeWire maps only shared memory itself).
void CPW_buffer_view(struct pw_buffer *buffer, CPW_frame_view *out);

/// Brackets CPU reads of a DMA-BUF's mapping (DMA_BUF_IOCTL_SYNC), so the GPU's writes are
/// visible and its caches kept coherent; nothing for shared memory.
void CPW_buffer_begin_read(struct pw_buffer *buffer);
void CPW_buffer_end_read(struct pw_buffer *buffer);

typedef struct {
    int32_t x, y;
    uint32_t width, height;
} CPW_rect;

/// The rectangles that changed since the producer's previous picture (SPA_META_VideoDamage),
/// up to `max` (more are merged into the last). Returns how many, or -1 when the buffer has
/// no damage metadata or lists no rectangle: then anything may have changed.
int CPW_buffer_damage(struct pw_buffer *buffer, CPW_rect *rects, int max);

typedef struct {
    int32_t x, y;               // where the pointer's hotspot is, in the picture
    int has_bitmap;             // a new picture of the pointer comes with this buffer
    int32_t hotspot_x, hotspot_y;
    uint32_t format;            // SPA_VIDEO_FORMAT_* of the bitmap
    uint32_t width, height;     // 0 x 0: the pointer is hidden
    int32_t stride;
    const uint8_t *pixels;      // width x height, `stride` bytes a row; valid while the buffer is held
} CPW_cursor;

/// The pointer as the producer describes it beside the picture (SPA_META_Cursor, the
/// portal's metadata cursor mode). 0 when the buffer says where it is; -1 when it has no
/// such metadata or the pointer is not known (off the screen, or no pointer yet).
int CPW_buffer_cursor(struct pw_buffer *buffer, CPW_cursor *out);

typedef struct {
    int found;               // the producer's node and its output port were found
    uint32_t formats;        // the EnumFormat params of that port
    uint32_t readable;       // of them, ones in shared memory or offering the linear modifier
    uint64_t gpu_modifier;   // a modifier of a DMA-BUF format that offers no linear one (0: none seen)
} CPW_producer_offer;

/// What a producer offers, when a stream agreed on no format with it: finds node `node_id`
/// (or, when it is PW_ID_ANY, the node named `node_name`) on `core` and reads its output
/// port's EnumFormat params, running `loop` for up to `timeout_ms`. 0, or a negative errno.
int CPW_inspect_producer(struct pw_loop *loop, struct pw_core *core, uint32_t node_id, const char *node_name,
                         int timeout_ms, CPW_producer_offer *out);

/// Waits, running `loop` for up to `timeout_ms`, until the server has handled everything sent
/// on `core` so far (a sync and its done). 0, or a negative errno.
int CPW_core_roundtrip(struct pw_loop *loop, struct pw_core *core, int timeout_ms);

/// The stream events, as plain C function pointers with one context.
typedef struct {
    void *context;
    void (*state_changed)(void *context, enum pw_stream_state old_state, enum pw_stream_state state, const char *error);
    void (*param_changed)(void *context, uint32_t id, const struct spa_pod *param);
    void (*process)(void *context);
} CPW_stream_handlers;

typedef struct CPW_stream_listener CPW_stream_listener;

/// Registers `handlers` (copied) on `stream`, and maps DMA-BUF buffers as they come and go;
/// remove with CPW_stream_unlisten before the stream goes (after it is disconnected).
CPW_stream_listener *CPW_stream_listen(struct pw_stream *stream, const CPW_stream_handlers *handlers);
void CPW_stream_unlisten(CPW_stream_listener *listener);

#endif
