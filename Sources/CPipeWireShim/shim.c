#include "CPipeWireShim.h"
#include <stdlib.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/buffers.h>
#include <spa/pod/builder.h>
#include <spa/buffer/meta.h>

int CPW_loop_iterate(struct pw_loop *loop, int timeout_ms) {
    pw_loop_enter(loop);
    int result = pw_loop_iterate(loop, timeout_ms);
    pw_loop_leave(loop);
    return result;
}

const struct spa_pod *CPW_build_enum_format(uint8_t *buffer, uint32_t size, const uint32_t *formats, uint32_t count,
                                            uint32_t width, uint32_t height, uint32_t max_fps) {
    if (count == 0) return NULL;
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, size);
    struct spa_pod_frame object, choice;
    spa_pod_builder_push_object(&b, &object, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
    spa_pod_builder_add(&b, SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
                        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw), 0);
    // An enum choice lists its default first, then the alternatives.
    spa_pod_builder_prop(&b, SPA_FORMAT_VIDEO_format, 0);
    spa_pod_builder_push_choice(&b, &choice, SPA_CHOICE_Enum, 0);
    spa_pod_builder_id(&b, formats[0]);
    for (uint32_t i = 0; i < count; i++) spa_pod_builder_id(&b, formats[i]);
    spa_pod_builder_pop(&b, &choice);
    spa_pod_builder_add(&b,
        SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&SPA_RECTANGLE(width, height),
                                                              &SPA_RECTANGLE(1, 1), &SPA_RECTANGLE(8192, 8192)),
        // Screen casts are variable-rate: framerate 0/1, with the cap as maxFramerate.
        SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(&SPA_FRACTION(0, 1), &SPA_FRACTION(0, 1),
                                                                  &SPA_FRACTION(1000, 1)),
        SPA_FORMAT_VIDEO_maxFramerate, SPA_POD_CHOICE_RANGE_Fraction(&SPA_FRACTION(max_fps, 1), &SPA_FRACTION(1, 1),
                                                                     &SPA_FRACTION(max_fps, 1)),
        0);
    return (const struct spa_pod *)spa_pod_builder_pop(&b, &object);
}

uint32_t CPW_build_buffer_params(uint8_t *buffer, uint32_t size, uint32_t data_types,
                                 const struct spa_pod **params, uint32_t max) {
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, size);
    uint32_t n = 0;
    if (n < max) params[n++] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 16),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((int)data_types));
    if (n < max) params[n++] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    // wlroots' portal sends a turned output's pictures as they lie in its buffer, with the turn as metadata.
    if (n < max) params[n++] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoTransform),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_videotransform)));
    if (n < max) params[n++] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoDamage),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(sizeof(struct spa_meta_region) * 16, sizeof(struct spa_meta_region) * 1,
                                                      sizeof(struct spa_meta_region) * 16));
    // The pointer and its picture, when it comes as metadata. Producers fix the size (mutter 43:
    // room for 384x384 pixels), so the range must take theirs.
#define CPW_CURSOR_META_SIZE(w, h) ((int)(sizeof(struct spa_meta_cursor) + sizeof(struct spa_meta_bitmap) + (w) * (h) * 4))
    if (n < max) params[n++] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Cursor),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(CPW_CURSOR_META_SIZE(64, 64), CPW_CURSOR_META_SIZE(1, 1),
                                                      CPW_CURSOR_META_SIZE(1024, 1024)));
    for (uint32_t i = 0; i < n; i++) if (params[i] == NULL) return 0;
    return n;
}

int CPW_parse_video_format(const struct spa_pod *param, CPW_video_format *out) {
    uint32_t media_type, media_subtype;
    if (param == NULL || spa_format_parse(param, &media_type, &media_subtype) < 0) return -EINVAL;
    if (media_type != SPA_MEDIA_TYPE_video || media_subtype != SPA_MEDIA_SUBTYPE_raw) return -ENOTSUP;
    struct spa_video_info_raw raw = { 0 };
    if (spa_format_video_raw_parse(param, &raw) < 0) return -EINVAL;
    out->format = raw.format;
    out->width = raw.size.width;
    out->height = raw.size.height;
    out->max_fps_num = raw.max_framerate.num;
    out->max_fps_den = raw.max_framerate.denom;
    out->has_modifier = spa_pod_find_prop(param, NULL, SPA_FORMAT_VIDEO_modifier) != NULL;
    return 0;
}

void CPW_buffer_view(struct pw_buffer *buffer, CPW_frame_view *out) {
    struct spa_buffer *spa = buffer->buffer;
    struct spa_data *d = &spa->datas[0];
    struct spa_meta_header *header = spa_buffer_find_meta_data(spa, SPA_META_Header, sizeof(*header));
    out->type = d->type;
    out->size = d->chunk ? d->chunk->size : 0;
    out->stride = d->chunk ? d->chunk->stride : 0;
    out->data = d->data && d->chunk ? (const uint8_t *)d->data + d->chunk->offset : NULL;
    out->corrupted = (d->chunk && (d->chunk->flags & SPA_CHUNK_FLAG_CORRUPTED)) ||
                     (header && (header->flags & SPA_META_HEADER_FLAG_CORRUPTED));
    out->pts = header ? header->pts : -1;
    struct spa_meta_videotransform *turn = spa_buffer_find_meta_data(spa, SPA_META_VideoTransform, sizeof(*turn));
    out->transform = turn ? turn->transform : SPA_META_TRANSFORMATION_None;
}

struct CPW_stream_listener {
    struct spa_hook hook;
    CPW_stream_handlers handlers;
};

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    CPW_stream_listener *l = data;
    if (l->handlers.state_changed) l->handlers.state_changed(l->handlers.context, old, state, error);
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    CPW_stream_listener *l = data;
    if (l->handlers.param_changed) l->handlers.param_changed(l->handlers.context, id, param);
}

static void on_process(void *data) {
    CPW_stream_listener *l = data;
    if (l->handlers.process) l->handlers.process(l->handlers.context);
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .process = on_process,
};

CPW_stream_listener *CPW_stream_listen(struct pw_stream *stream, const CPW_stream_handlers *handlers) {
    CPW_stream_listener *l = calloc(1, sizeof(*l));
    if (l == NULL) return NULL;
    l->handlers = *handlers;
    pw_stream_add_listener(stream, &l->hook, &stream_events, l);
    return l;
}

void CPW_stream_unlisten(CPW_stream_listener *listener) {
    if (listener == NULL) return;
    spa_hook_remove(&listener->hook);
    free(listener);
}

int CPW_buffer_damage(struct pw_buffer *buffer, CPW_rect *rects, int max) {
    struct spa_meta *damage = spa_buffer_find_meta(buffer->buffer, SPA_META_VideoDamage);
    if (damage == NULL || max <= 0) return -1;
    int count = 0;
    struct spa_meta_region *region;
    spa_meta_for_each(region, damage) {
        // An empty region ends the list.
        if (!spa_meta_region_is_valid(region)) break;
        CPW_rect r = { region->region.position.x, region->region.position.y,
                       region->region.size.width, region->region.size.height };
        if (count < max) {
            rects[count++] = r;
        } else {
            CPW_rect *last = &rects[max - 1];
            int32_t x1 = SPA_MIN(last->x, r.x), y1 = SPA_MIN(last->y, r.y);
            int32_t x2 = SPA_MAX(last->x + (int32_t)last->width, r.x + (int32_t)r.width);
            int32_t y2 = SPA_MAX(last->y + (int32_t)last->height, r.y + (int32_t)r.height);
            *last = (CPW_rect){ x1, y1, (uint32_t)(x2 - x1), (uint32_t)(y2 - y1) };
        }
    }
    return count > 0 ? count : -1;
}

int CPW_buffer_cursor(struct pw_buffer *buffer, CPW_cursor *out) {
    struct spa_meta *meta = spa_buffer_find_meta(buffer->buffer, SPA_META_Cursor);
    if (meta == NULL || meta->size < sizeof(struct spa_meta_cursor)) return -1;
    struct spa_meta_cursor *cursor = meta->data;
    if (!spa_meta_cursor_is_valid(cursor)) return -1;
    *out = (CPW_cursor){ .x = cursor->position.x, .y = cursor->position.y };
    if (cursor->bitmap_offset == 0 ||
        cursor->bitmap_offset + sizeof(struct spa_meta_bitmap) > meta->size) return 0;
    struct spa_meta_bitmap *bitmap = SPA_PTROFF(cursor, cursor->bitmap_offset, struct spa_meta_bitmap);
    out->has_bitmap = 1;
    out->hotspot_x = cursor->hotspot.x;
    out->hotspot_y = cursor->hotspot.y;
    if (!spa_meta_bitmap_is_valid(bitmap)) return 0;  // a hidden pointer
    // The bitmap's rows must lie inside the metadata.
    uint64_t end = (uint64_t)cursor->bitmap_offset + bitmap->offset +
                   (uint64_t)bitmap->stride * (bitmap->size.height - 1) + (uint64_t)bitmap->size.width * 4;
    if (bitmap->stride < (int32_t)bitmap->size.width * 4 || end > meta->size) return 0;
    out->format = bitmap->format;
    out->width = bitmap->size.width;
    out->height = bitmap->size.height;
    out->stride = bitmap->stride;
    out->pixels = SPA_PTROFF(bitmap, bitmap->offset, const uint8_t);
    return 0;
}
