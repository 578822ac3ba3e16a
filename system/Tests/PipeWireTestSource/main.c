// A PipeWire video source for tests: one solid colour, 30 pictures a second, in the buffer
// kind a compositor or camera on a GPU machine would send. This machine has no GPU, so its
// "DMA-BUF" is shared memory (a memfd) announced and typed as SPA_DATA_DmaBuf: the
// consumer goes through PipeWire's whole DMA-BUF negotiation (modifiers, fixation, buffer
// types) and maps and reads the descriptor as it would a linear GPU buffer.
//
//   replay-pipewire-test-source --name NODE [--offer dmabuf|tiled|both|shm] [--colour RRGGBB] [--size WxH]
//
// dmabuf: a linear DMA-BUF only. tiled: an Intel X-tiled one only (no CPU reader can take
// it). both: DMA-BUF (linear or tiled) first, then shared memory, as mutter offers.
// shm: shared memory only. Prints "buffers dmabuf modifier 0x..." or "buffers memfd" once
// buffers are agreed, and runs until SIGTERM or SIGINT.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <pipewire/pipewire.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/buffers.h>
#include <spa/pod/builder.h>

// libdrm's drm_fourcc.h values, spelled out so the test needs no libdrm.
#define MODIFIER_LINEAR 0ULL
#define MODIFIER_INTEL_X_TILED ((0x01ULL << 56) | 1)

enum offer { OFFER_DMABUF, OFFER_TILED, OFFER_BOTH, OFFER_SHM };

struct source {
    struct pw_main_loop *loop;
    struct pw_stream *stream;
    struct spa_hook listener;
    struct spa_source *timer;
    enum offer offer;
    uint32_t width, height, colour;
    int fixed;                 // the modifier was chosen: offer only it
    uint64_t modifier;
    int dmabuf;                // the agreed format has a modifier
    int announced;
};

static void add_format(struct spa_pod_builder *b, const struct source *s, int with_modifier, const uint64_t *modifiers,
                       uint32_t count, int fixed, const struct spa_pod **out) {
    struct spa_pod_frame object, choice;
    spa_pod_builder_push_object(b, &object, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
    spa_pod_builder_add(b, SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
                        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
                        SPA_FORMAT_VIDEO_format, SPA_POD_Id(SPA_VIDEO_FORMAT_BGRx),
                        SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(s->width, s->height)),
                        SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(0, 1)),
                        SPA_FORMAT_VIDEO_maxFramerate,
                        SPA_POD_CHOICE_RANGE_Fraction(&SPA_FRACTION(30, 1), &SPA_FRACTION(1, 1), &SPA_FRACTION(30, 1)), 0);
    if (with_modifier) {
        if (fixed) {
            spa_pod_builder_prop(b, SPA_FORMAT_VIDEO_modifier, SPA_POD_PROP_FLAG_MANDATORY);
            spa_pod_builder_long(b, (int64_t)modifiers[0]);
        } else {
            spa_pod_builder_prop(b, SPA_FORMAT_VIDEO_modifier, SPA_POD_PROP_FLAG_MANDATORY | SPA_POD_PROP_FLAG_DONT_FIXATE);
            spa_pod_builder_push_choice(b, &choice, SPA_CHOICE_Enum, 0);
            spa_pod_builder_long(b, (int64_t)modifiers[0]);
            for (uint32_t i = 0; i < count; i++) spa_pod_builder_long(b, (int64_t)modifiers[i]);
            spa_pod_builder_pop(b, &choice);
        }
    }
    *out = spa_pod_builder_pop(b, &object);
}

/// The formats this source offers now: before fixation every modifier it can make, after it the chosen one.
static uint32_t build_formats(const struct source *s, struct spa_pod_builder *b, const struct spa_pod **params) {
    uint32_t n = 0;
    if (s->fixed) {
        add_format(b, s, 1, &s->modifier, 1, 1, &params[n++]);
        return n;
    }
    static const uint64_t linear[] = { MODIFIER_LINEAR }, tiled[] = { MODIFIER_INTEL_X_TILED },
                          any[] = { MODIFIER_INTEL_X_TILED, MODIFIER_LINEAR };
    switch (s->offer) {
    case OFFER_DMABUF: add_format(b, s, 1, linear, 1, 0, &params[n++]); break;
    case OFFER_TILED: add_format(b, s, 1, tiled, 1, 0, &params[n++]); break;
    case OFFER_BOTH:
        add_format(b, s, 1, any, 2, 0, &params[n++]);
        add_format(b, s, 0, NULL, 0, 0, &params[n++]);
        break;
    case OFFER_SHM: add_format(b, s, 0, NULL, 0, 0, &params[n++]); break;
    }
    return n;
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct source *s = data;
    if (id != SPA_PARAM_Format || param == NULL) return;
    const struct spa_pod_prop *modifier = spa_pod_find_prop(param, NULL, SPA_FORMAT_VIDEO_modifier);
    uint8_t pods[2048];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(pods, sizeof(pods));
    const struct spa_pod *params[4];
    if (modifier != NULL && !s->fixed) {
        // Fixation, as a GPU producer does it: take the first modifier both sides listed, then
        // offer only that; the consumer sees the format again with the modifier fixed.
        uint32_t n_values = 0, choice = SPA_CHOICE_None;
        const struct spa_pod *values = spa_pod_get_values(&modifier->value, &n_values, &choice);
        const int64_t *list = SPA_POD_BODY_CONST(values);
        s->modifier = (uint64_t)list[choice == SPA_CHOICE_None || n_values == 1 ? 0 : 1];
        s->fixed = 1;
        uint32_t n = build_formats(s, &b, params);
        pw_stream_update_params(s->stream, params, n);
        return;
    }
    s->dmabuf = modifier != NULL;
    uint32_t stride = s->width * 4;
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 8),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_size, SPA_POD_Int((int)(stride * s->height)),
        SPA_PARAM_BUFFERS_stride, SPA_POD_Int((int)stride),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int(1 << (s->dmabuf ? SPA_DATA_DmaBuf : SPA_DATA_MemFd)));
    params[1] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    pw_stream_update_params(s->stream, params, 2);
}

static void on_add_buffer(void *data, struct pw_buffer *buffer) {
    struct source *s = data;
    struct spa_data *d = &buffer->buffer->datas[0];
    uint32_t size = s->width * 4 * s->height;
    int fd = memfd_create("replay-pipewire-test-source", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, size) < 0) {
        fprintf(stderr, "cannot make a buffer: %s\n", strerror(errno));
        pw_main_loop_quit(s->loop);
        return;
    }
    d->type = s->dmabuf ? SPA_DATA_DmaBuf : SPA_DATA_MemFd;
    d->flags = SPA_DATA_FLAG_READWRITE;
    d->fd = fd;
    d->mapoffset = 0;
    d->maxsize = size;
    d->data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (d->data == MAP_FAILED) {
        d->data = NULL;
        pw_main_loop_quit(s->loop);
        return;
    }
    if (!s->announced) {
        if (s->dmabuf) printf("buffers dmabuf modifier 0x%llx\n", (unsigned long long)s->modifier);
        else printf("buffers memfd\n");
        fflush(stdout);
        s->announced = 1;
    }
}

static void on_remove_buffer(void *data, struct pw_buffer *buffer) {
    struct spa_data *d = &buffer->buffer->datas[0];
    if (d->data != NULL) munmap(d->data, d->maxsize);
    if (d->fd >= 0) close((int)d->fd);
    d->data = NULL;
    d->fd = -1;
}

static void on_process(void *data) {
    struct source *s = data;
    struct pw_buffer *buffer = pw_stream_dequeue_buffer(s->stream);
    if (buffer == NULL) return;
    struct spa_data *d = &buffer->buffer->datas[0];
    if (d->data != NULL) {
        uint32_t *pixel = d->data;
        for (uint32_t i = 0; i < s->width * s->height; i++) pixel[i] = s->colour;  // BGRx in memory
        d->chunk->offset = 0;
        d->chunk->size = s->width * 4 * s->height;
        d->chunk->stride = (int32_t)(s->width * 4);
        d->chunk->flags = 0;
    }
    pw_stream_queue_buffer(s->stream, buffer);
}

static const struct pw_stream_events events = {
    PW_VERSION_STREAM_EVENTS,
    .param_changed = on_param_changed,
    .add_buffer = on_add_buffer,
    .remove_buffer = on_remove_buffer,
    .process = on_process,
};

static void on_timer(void *data, uint64_t expirations) {
    (void)expirations;
    struct source *s = data;
    pw_stream_trigger_process(s->stream);
}

static void on_signal(void *data, int signal_number) {
    (void)signal_number;
    pw_main_loop_quit(((struct source *)data)->loop);
}

static int usage(void) {
    fprintf(stderr, "usage: replay-pipewire-test-source --name NODE [--offer dmabuf|tiled|both|shm] [--colour RRGGBB] [--size WxH]\n");
    return 2;
}

int main(int argc, char **argv) {
    struct source s = { .offer = OFFER_DMABUF, .width = 320, .height = 240, .colour = 0xE02020 };
    const char *name = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--name") == 0) name = argv[i + 1];
        else if (strcmp(argv[i], "--colour") == 0) s.colour = (uint32_t)strtoul(argv[i + 1], NULL, 16);
        else if (strcmp(argv[i], "--size") == 0) {
            if (sscanf(argv[i + 1], "%ux%u", &s.width, &s.height) != 2 || s.width == 0 || s.height == 0) return usage();
        } else if (strcmp(argv[i], "--offer") == 0) {
            const char *o = argv[i + 1];
            if (strcmp(o, "dmabuf") == 0) s.offer = OFFER_DMABUF;
            else if (strcmp(o, "tiled") == 0) s.offer = OFFER_TILED;
            else if (strcmp(o, "both") == 0) s.offer = OFFER_BOTH;
            else if (strcmp(o, "shm") == 0) s.offer = OFFER_SHM;
            else return usage();
        } else return usage();
    }
    if (name == NULL || argc % 2 == 0) return usage();

    pw_init(&argc, &argv);
    s.loop = pw_main_loop_new(NULL);
    struct pw_loop *loop = pw_main_loop_get_loop(s.loop);
    pw_loop_add_signal(loop, SIGTERM, on_signal, &s);
    pw_loop_add_signal(loop, SIGINT, on_signal, &s);
    s.stream = pw_stream_new_simple(loop, name,
        pw_properties_new(PW_KEY_MEDIA_CLASS, "Video/Source", PW_KEY_NODE_NAME, name, PW_KEY_MEDIA_TYPE, "Video",
                          PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "Camera", NULL),
        &events, &s);
    uint8_t pods[2048];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(pods, sizeof(pods));
    const struct spa_pod *params[4];
    uint32_t n = build_formats(&s, &b, params);
    if (pw_stream_connect(s.stream, SPA_DIRECTION_OUTPUT, PW_ID_ANY,
                          PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_ALLOC_BUFFERS, params, n) < 0) {
        fprintf(stderr, "cannot connect to PipeWire\n");
        return 1;
    }
    s.timer = pw_loop_add_timer(loop, on_timer, &s);
    struct timespec first = { 0, 1 }, every = { 0, 1000000000 / 30 };
    pw_loop_update_timer(loop, s.timer, &first, &every, false);
    pw_main_loop_run(s.loop);
    pw_stream_destroy(s.stream);
    pw_main_loop_destroy(s.loop);
    pw_deinit();
    return 0;
}
