#include "CPipeWireShim.h"
#include <stdlib.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/buffers.h>
#include <spa/pod/builder.h>
#include <spa/buffer/meta.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/dma-buf.h>
#include <string.h>
#include <time.h>

int CPW_loop_iterate(struct pw_loop *loop, int timeout_ms) {
    pw_loop_enter(loop);
    int result = pw_loop_iterate(loop, timeout_ms);
    pw_loop_leave(loop);
    return result;
}

const struct spa_pod *CPW_build_enum_format(uint8_t *buffer, uint32_t size, const uint32_t *formats, uint32_t count,
                                            uint32_t width, uint32_t height, uint32_t max_fps, int linear_dmabuf) {
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
    if (linear_dmabuf) {
        // Mandatory: only a producer that sends DMA-BUF matches. Don't-fixate: the producer
        // chooses among the modifiers both sides list (here the one), as PipeWire's DMA-BUF
        // negotiation has it.
        spa_pod_builder_prop(&b, SPA_FORMAT_VIDEO_modifier, SPA_POD_PROP_FLAG_MANDATORY | SPA_POD_PROP_FLAG_DONT_FIXATE);
        spa_pod_builder_push_choice(&b, &choice, SPA_CHOICE_Enum, 0);
        spa_pod_builder_long(&b, (int64_t)CPW_MODIFIER_LINEAR);
        spa_pod_builder_long(&b, (int64_t)CPW_MODIFIER_LINEAR);
        spa_pod_builder_pop(&b, &choice);
    }
    return (const struct spa_pod *)spa_pod_builder_pop(&b, &object);
}

uint32_t CPW_build_buffer_params(uint8_t *buffer, uint32_t size, uint32_t data_types, int32_t buffers,
                                 const struct spa_pod **params, uint32_t max) {
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, size);
    uint32_t n = 0;
    if (n < max) params[n++] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(buffers, 2, 16),
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
    const struct spa_pod_prop *modifier = spa_pod_find_prop(param, NULL, SPA_FORMAT_VIDEO_modifier);
    out->has_modifier = modifier != NULL;
    out->modifier_fixed = 0;
    out->modifier = 0;
    if (modifier != NULL) {
        // Still a choice of several while the producer has not fixed it (a choice of one is fixed).
        uint32_t n_values = 0, choice = SPA_CHOICE_None;
        const struct spa_pod *value = spa_pod_get_values(&modifier->value, &n_values, &choice);
        int64_t chosen;
        if ((choice == SPA_CHOICE_None || n_values == 1) && spa_pod_get_long(value, &chosen) == 0) {
            out->modifier_fixed = 1;
            out->modifier = (uint64_t)chosen;
        }
    }
    return 0;
}

/// Our own mapping of a DMA-BUF's first plane, kept in the pw_buffer's user_data.
typedef struct {
    struct pw_buffer *buffer;
    void *base;             // the mapping, from the descriptor's start
    size_t length;
    const uint8_t *data;    // where the plane's memory starts (mapoffset into it)
    uint32_t maxsize;
} CPW_dmabuf_mapping;

/// The first plane's memory: PipeWire's mapping (shared memory), else ours (a DMA-BUF).
static const uint8_t *plane_memory(struct pw_buffer *buffer, uint32_t *maxsize) {
    struct spa_data *d = &buffer->buffer->datas[0];
    if (d->data != NULL) {
        *maxsize = d->maxsize;
        return d->data;
    }
    CPW_dmabuf_mapping *mapping = buffer->user_data;
    if (d->type != SPA_DATA_DmaBuf || mapping == NULL) return NULL;
    *maxsize = mapping->maxsize;
    return mapping->data;
}

void CPW_buffer_view(struct pw_buffer *buffer, CPW_frame_view *out) {
    struct spa_buffer *spa = buffer->buffer;
    struct spa_data *d = &spa->datas[0];
    struct spa_meta_header *header = spa_buffer_find_meta_data(spa, SPA_META_Header, sizeof(*header));
    uint32_t maxsize = 0;
    const uint8_t *memory = plane_memory(buffer, &maxsize);
    out->type = d->type;
    out->size = d->chunk ? d->chunk->size : 0;
    out->stride = d->chunk ? d->chunk->stride : 0;
    // The chunk must lie inside the plane: a producer's bad offset never reads past the mapping.
    int inside = d->chunk && (uint64_t)d->chunk->offset + d->chunk->size <= maxsize;
    out->data = memory && inside ? memory + d->chunk->offset : NULL;
    out->corrupted = (d->chunk && (d->chunk->flags & SPA_CHUNK_FLAG_CORRUPTED)) ||
                     (header && (header->flags & SPA_META_HEADER_FLAG_CORRUPTED));
    out->pts = header ? header->pts : -1;
    struct spa_meta_videotransform *turn = spa_buffer_find_meta_data(spa, SPA_META_VideoTransform, sizeof(*turn));
    out->transform = turn ? turn->transform : SPA_META_TRANSFORMATION_None;
}

static void sync_dmabuf(struct pw_buffer *buffer, uint64_t flags) {
    struct spa_data *d = &buffer->buffer->datas[0];
    if (d->type != SPA_DATA_DmaBuf || d->fd < 0) return;
    struct dma_buf_sync sync = { .flags = flags | DMA_BUF_SYNC_READ };
    // Interrupted calls are retried; other failures (an exporter without sync) leave the read as it is.
    while (ioctl((int)d->fd, DMA_BUF_IOCTL_SYNC, &sync) < 0 && errno == EINTR) {}
}

void CPW_buffer_begin_read(struct pw_buffer *buffer) { sync_dmabuf(buffer, DMA_BUF_SYNC_START); }

void CPW_buffer_end_read(struct pw_buffer *buffer) { sync_dmabuf(buffer, DMA_BUF_SYNC_END); }

#define CPW_MAX_MAPPINGS 32

struct CPW_stream_listener {
    struct spa_hook hook;
    CPW_stream_handlers handlers;
    // Mappings made here, so none outlives the listener even if the stream never removes its buffers.
    CPW_dmabuf_mapping *mappings[CPW_MAX_MAPPINGS];
};

static void unmap_dmabuf(CPW_dmabuf_mapping *mapping) {
    munmap(mapping->base, mapping->length);
    free(mapping);
}

static void on_add_buffer(void *data, struct pw_buffer *buffer) {
    CPW_stream_listener *l = data;
    struct spa_data *d = &buffer->buffer->datas[0];
    if (d->type != SPA_DATA_DmaBuf || d->data != NULL || d->fd < 0 || d->maxsize == 0) return;
    size_t slot = 0;
    while (slot < CPW_MAX_MAPPINGS && l->mappings[slot] != NULL) slot++;
    if (slot == CPW_MAX_MAPPINGS) return;
    // mmap wants a page-aligned offset: map from the start and step to the plane.
    size_t length = (size_t)d->mapoffset + d->maxsize;
    void *base = mmap(NULL, length, PROT_READ, MAP_SHARED, (int)d->fd, 0);
    if (base == MAP_FAILED) return;  // then the buffer reads as empty, and the stream says it got no picture
    CPW_dmabuf_mapping *mapping = calloc(1, sizeof(*mapping));
    if (mapping == NULL) { munmap(base, length); return; }
    *mapping = (CPW_dmabuf_mapping){ buffer, base, length, (const uint8_t *)base + d->mapoffset, d->maxsize };
    buffer->user_data = mapping;
    l->mappings[slot] = mapping;
}

static void on_remove_buffer(void *data, struct pw_buffer *buffer) {
    CPW_stream_listener *l = data;
    for (size_t i = 0; i < CPW_MAX_MAPPINGS; i++) {
        if (l->mappings[i] != NULL && l->mappings[i]->buffer == buffer) {
            buffer->user_data = NULL;
            unmap_dmabuf(l->mappings[i]);
            l->mappings[i] = NULL;
        }
    }
}

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
    .add_buffer = on_add_buffer,
    .remove_buffer = on_remove_buffer,
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
    for (size_t i = 0; i < CPW_MAX_MAPPINGS; i++) if (listener->mappings[i] != NULL) unmap_dmabuf(listener->mappings[i]);
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

// ---- What a producer offers (for the error when nothing was agreed) ----

#define CPW_MAX_PORTS 256

struct inspection {
    struct pw_core *core;
    struct pw_registry *registry;
    struct pw_port *port;
    struct spa_hook core_hook, registry_hook, port_hook;
    uint32_t node_id;
    const char *node_name;
    struct { uint32_t id, node; } ports[CPW_MAX_PORTS];  // output ports seen, with their node
    uint32_t n_ports;
    int pending;            // the sequence number of the sync we wait for
    int stage;              // 0: listing globals, 1: reading the port's formats, 2: done
    CPW_producer_offer *out;
};

static void inspection_global(void *data, uint32_t id, uint32_t permissions, const char *type, uint32_t version,
                              const struct spa_dict *props) {
    struct inspection *in = data;
    (void)permissions; (void)version;
    if (props == NULL) return;
    if (strcmp(type, PW_TYPE_INTERFACE_Node) == 0 && in->node_id == PW_ID_ANY) {
        const char *name = spa_dict_lookup(props, PW_KEY_NODE_NAME);
        if (name != NULL && in->node_name != NULL && strcmp(name, in->node_name) == 0) in->node_id = id;
    } else if (strcmp(type, PW_TYPE_INTERFACE_Port) == 0 && in->n_ports < CPW_MAX_PORTS) {
        const char *direction = spa_dict_lookup(props, PW_KEY_PORT_DIRECTION);
        const char *node = spa_dict_lookup(props, PW_KEY_NODE_ID);
        if (direction != NULL && node != NULL && strcmp(direction, "out") == 0) {
            in->ports[in->n_ports].id = id;
            in->ports[in->n_ports].node = (uint32_t)strtoul(node, NULL, 10);
            in->n_ports++;
        }
    }
}

static const struct pw_registry_events inspection_registry_events = {
    PW_VERSION_REGISTRY_EVENTS,
    .global = inspection_global,
};

static void inspection_param(void *data, int seq, uint32_t id, uint32_t index, uint32_t next, const struct spa_pod *param) {
    struct inspection *in = data;
    (void)seq; (void)index; (void)next;
    uint32_t media_type, media_subtype;
    if (id != SPA_PARAM_EnumFormat || param == NULL || spa_format_parse(param, &media_type, &media_subtype) < 0 ||
        media_type != SPA_MEDIA_TYPE_video || media_subtype != SPA_MEDIA_SUBTYPE_raw) return;
    in->out->formats++;
    const struct spa_pod_prop *modifier = spa_pod_find_prop(param, NULL, SPA_FORMAT_VIDEO_modifier);
    if (modifier == NULL) {
        in->out->readable++;
        return;
    }
    uint32_t n_values = 0, choice = SPA_CHOICE_None;
    const struct spa_pod *values = spa_pod_get_values(&modifier->value, &n_values, &choice);
    if (values->type != SPA_TYPE_Long || n_values == 0) return;
    const int64_t *list = SPA_POD_BODY_CONST(values);
    for (uint32_t i = 0; i < n_values; i++) {
        if ((uint64_t)list[i] == CPW_MODIFIER_LINEAR) {
            in->out->readable++;
            return;
        }
    }
    if (in->out->gpu_modifier == 0) in->out->gpu_modifier = (uint64_t)list[0];
}

static const struct pw_port_events inspection_port_events = {
    PW_VERSION_PORT_EVENTS,
    .param = inspection_param,
};

static void inspection_done(void *data, uint32_t id, int seq) {
    struct inspection *in = data;
    if (id != PW_ID_CORE || seq != in->pending) return;
    if (in->stage == 0) {
        uint32_t port = PW_ID_ANY;
        for (uint32_t i = 0; i < in->n_ports && in->node_id != PW_ID_ANY; i++)
            if (in->ports[i].node == in->node_id) { port = in->ports[i].id; break; }
        in->port = port == PW_ID_ANY ? NULL : pw_registry_bind(in->registry, port, PW_TYPE_INTERFACE_Port, PW_VERSION_PORT, 0);
        if (in->port == NULL) { in->stage = 2; return; }
        in->out->found = 1;
        pw_port_add_listener(in->port, &in->port_hook, &inspection_port_events, in);
        pw_port_enum_params(in->port, 0, SPA_PARAM_EnumFormat, 0, UINT32_MAX, NULL);
        in->pending = pw_core_sync(in->core, PW_ID_CORE, 0);
        in->stage = 1;
    } else {
        in->stage = 2;
    }
}

static const struct pw_core_events inspection_core_events = {
    PW_VERSION_CORE_EVENTS,
    .done = inspection_done,
};

static int64_t monotonic_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Runs `loop` until `*value` reaches `target` (set by the loop's own callbacks), for up to
   `timeout_ms`. 0, -ETIMEDOUT, or the loop's own negative errno. */
static int iterate_until(struct pw_loop *loop, const int *value, int target, int timeout_ms) {
    int64_t deadline = monotonic_ms() + timeout_ms;
    while (*value < target) {
        int64_t left = deadline - monotonic_ms();
        if (left <= 0) return -ETIMEDOUT;
        int dispatched = CPW_loop_iterate(loop, (int)left);
        if (dispatched < 0 && dispatched != -EINTR) return dispatched;
    }
    return 0;
}

int CPW_inspect_producer(struct pw_loop *loop, struct pw_core *core, uint32_t node_id, const char *node_name,
                         int timeout_ms, CPW_producer_offer *out) {
    *out = (CPW_producer_offer){ 0 };
    struct inspection *in = calloc(1, sizeof(*in));  // large (the port list): not on the stack
    if (in == NULL) return -ENOMEM;
    *in = (struct inspection){ .core = core, .node_id = node_id, .node_name = node_name, .out = out };
    in->registry = pw_core_get_registry(core, PW_VERSION_REGISTRY, 0);
    if (in->registry == NULL) { free(in); return -ENOMEM; }
    pw_core_add_listener(core, &in->core_hook, &inspection_core_events, in);
    pw_registry_add_listener(in->registry, &in->registry_hook, &inspection_registry_events, in);
    in->pending = pw_core_sync(core, PW_ID_CORE, 0);
    int result = iterate_until(loop, &in->stage, 2, timeout_ms);
    if (in->port != NULL) {
        spa_hook_remove(&in->port_hook);
        pw_proxy_destroy((struct pw_proxy *)in->port);
    }
    spa_hook_remove(&in->registry_hook);
    spa_hook_remove(&in->core_hook);
    pw_proxy_destroy((struct pw_proxy *)in->registry);
    free(in);
    return result;
}

struct roundtrip {
    int pending;
    int done;
};

static void roundtrip_done(void *data, uint32_t id, int seq) {
    struct roundtrip *trip = data;
    if (id == PW_ID_CORE && seq == trip->pending) trip->done = 1;
}

static const struct pw_core_events roundtrip_core_events = {
    PW_VERSION_CORE_EVENTS,
    .done = roundtrip_done,
};

int CPW_core_roundtrip(struct pw_loop *loop, struct pw_core *core, int timeout_ms) {
    struct roundtrip trip = { 0 };
    struct spa_hook hook;
    spa_zero(hook);
    pw_core_add_listener(core, &hook, &roundtrip_core_events, &trip);
    trip.pending = pw_core_sync(core, PW_ID_CORE, 0);
    int result = trip.pending < 0 ? trip.pending : iterate_until(loop, &trip.done, 1, timeout_ms);
    spa_hook_remove(&hook);
    return result;
}
