/*
 * GStreamer at the edge of the gst extension: a pipeline parsed from the person's tail with
 * the extension's appsrcs before it. See include/CGstPipeline.h for the contract.
 */
#define _GNU_SOURCE
#include "CGstPipeline.h"

#include <dlfcn.h>
#include <libgen.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

struct CGstPipeline {
    GstElement *pipeline;
    GPtrArray *elements; /* GstElement*, referenced */
    GstElement *video_src, *audio_src;
    GMutex lock; /* everything below */
    GCond changed;
    int32_t fps;
    int32_t width, height, bt709, full_range; /* the caps set on video_src; width 0: none yet */
    void *context;
    CGstErrorCallback on_error;
    gboolean reported; /* the first error went to on_error */
    gboolean closing;
    gboolean eos;
    char *failure; /* the first error's text */
};

static void set_error(char **error, const char *format, ...) G_GNUC_PRINTF(2, 3);
static void set_error(char **error, const char *format, ...) {
    if (!error) return;
    va_list args;
    va_start(args, format);
    char *message = g_strdup_vprintf(format, args);
    va_end(args);
    *error = strdup(message); /* freed with cgst_free (free) */
    g_free(message);
}

void cgst_free(void *pointer) { free(pointer); }

static char *to_malloc(char *glib_string) {
    if (!glib_string) return NULL;
    char *copy = strdup(glib_string);
    g_free(glib_string);
    return copy;
}

/* ---------------------------------------------------------------------------------------- */
/* Start-up                                                                                  */

static GMutex init_lock;
static int initialized = 0;

/* Where Debian keeps the plugins: beside libgstreamer, in gstreamer-1.0/. */
static char *plugin_directory(void) {
    const char *override = g_getenv("OPENREPLAYKIT_GST_PLUGIN_DIR");
    if (override && *override) return g_strdup(override);
    Dl_info info;
    if (dladdr((void *)gst_init, &info) && info.dli_fname) {
        char *copy = g_strdup(info.dli_fname);
        char *directory = g_build_filename(dirname(copy), "gstreamer-1.0", NULL);
        g_free(copy);
        return directory;
    }
    return g_strdup("/usr/lib/x86_64-linux-gnu/gstreamer-1.0");
}

int cgst_initialize(const char *registry_dir, const char *const *plugins, char **error) {
    g_mutex_lock(&init_lock);
    if (initialized) {
        g_mutex_unlock(&init_lock);
        return 0;
    }
    /* A few malloc arenas, not one per streaming thread: resident memory counts against 50 MB. */
    mallopt(M_ARENA_MAX, 2);
    /* No scan of the system's plugins, no helper process, a registry only we use. */
    char *registry = g_build_filename(registry_dir ? registry_dir : g_get_tmp_dir(), "openreplaykit-gst-registry.bin", NULL);
    g_setenv("GST_REGISTRY_1_0", registry, TRUE);
    g_setenv("GST_REGISTRY", registry, TRUE);
    g_free(registry);
    g_setenv("GST_REGISTRY_FORK", "no", TRUE);
    g_setenv("GST_REGISTRY_UPDATE", "no", TRUE);
    g_setenv("GST_PLUGIN_SYSTEM_PATH_1_0", "", TRUE);
    g_setenv("GST_PLUGIN_SYSTEM_PATH", "", TRUE);
    g_setenv("GST_PLUGIN_PATH_1_0", "", TRUE);
    g_setenv("GST_PLUGIN_PATH", "", TRUE);
    GError *init_error = NULL;
    if (!gst_init_check(NULL, NULL, &init_error)) {
        set_error(error, "GStreamer did not start: %s", init_error ? init_error->message : "unknown");
        g_clear_error(&init_error);
        g_mutex_unlock(&init_lock);
        return -1;
    }
    char *directory = plugin_directory();
    for (int index = 0; plugins && plugins[index]; index++) {
        char *name = g_strdup_printf("libgst%s.so", plugins[index]);
        char *path = g_build_filename(directory, name, NULL);
        if (g_file_test(path, G_FILE_TEST_EXISTS)) {
            GError *load_error = NULL;
            GstPlugin *plugin = gst_plugin_load_file(path, &load_error);
            if (plugin) gst_object_unref(plugin);
            g_clear_error(&load_error); /* a plugin that does not load leaves its elements out, as a missing one */
        }
        g_free(name);
        g_free(path);
    }
    g_free(directory);
    initialized = 1;
    g_mutex_unlock(&init_lock);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Parsing and looking                                                                       */

static void collect(const GValue *item, gpointer data) {
    g_ptr_array_add(data, gst_object_ref(g_value_get_object(item)));
}

CGstPipeline *cgst_pipeline_parse(const char *description, char **error, char **missing) {
    if (missing) *missing = NULL;
    if (!initialized) {
        set_error(error, "cgst_initialize was not called");
        return NULL;
    }
    GstParseContext *context = gst_parse_context_new();
    GError *parse_error = NULL;
    GstElement *parsed = gst_parse_launch_full(description, context, GST_PARSE_FLAG_FATAL_ERRORS,
                                               &parse_error);
    if (!parsed || parse_error) {
        gchar **names = gst_parse_context_get_missing_elements(context);
        /* The context also lists an element whose property was wrong: only "no such element" names missing ones. */
        gboolean no_element = parse_error && g_error_matches(parse_error, GST_PARSE_ERROR, GST_PARSE_ERROR_NO_SUCH_ELEMENT);
        if (missing && no_element && names && names[0]) *missing = to_malloc(g_strjoinv(",", names));
        g_strfreev(names);
        set_error(error, "%s", parse_error ? parse_error->message : "GStreamer could not parse it");
        g_clear_error(&parse_error);
        if (parsed) gst_object_unref(gst_object_ref_sink(parsed));
        gst_parse_context_free(context);
        return NULL;
    }
    gst_parse_context_free(context);
    gst_object_ref_sink(parsed);
    if (!GST_IS_PIPELINE(parsed)) {
        set_error(error, "the description is not a pipeline");
        gst_object_unref(parsed);
        return NULL;
    }
    CGstPipeline *pipeline = g_new0(CGstPipeline, 1);
    g_mutex_init(&pipeline->lock);
    g_cond_init(&pipeline->changed);
    pipeline->pipeline = parsed;
    pipeline->elements = g_ptr_array_new_with_free_func(gst_object_unref);
    GstIterator *iterator = gst_bin_iterate_elements(GST_BIN(parsed));
    while (gst_iterator_foreach(iterator, collect, pipeline->elements) == GST_ITERATOR_RESYNC) {
        g_ptr_array_set_size(pipeline->elements, 0);
        gst_iterator_resync(iterator);
    }
    gst_iterator_free(iterator);
    pipeline->video_src = gst_bin_get_by_name(GST_BIN(parsed), "replay-video");
    pipeline->audio_src = gst_bin_get_by_name(GST_BIN(parsed), "replay-audio");
    if (!pipeline->video_src || !GST_IS_APP_SRC(pipeline->video_src) || (pipeline->audio_src && !GST_IS_APP_SRC(pipeline->audio_src))) {
        set_error(error, "the pipeline has no appsrc named replay-video for the pictures");
        cgst_pipeline_free(pipeline);
        return NULL;
    }
    return pipeline;
}

int32_t cgst_pipeline_element_count(CGstPipeline *pipeline) { return (int32_t)pipeline->elements->len; }

static GstElement *element_at(CGstPipeline *pipeline, int32_t index) {
    if (index < 0 || (guint)index >= pipeline->elements->len) return NULL;
    return g_ptr_array_index(pipeline->elements, index);
}

char *cgst_pipeline_element_factory(CGstPipeline *pipeline, int32_t index) {
    GstElement *element = element_at(pipeline, index);
    GstElementFactory *factory = element ? gst_element_get_factory(element) : NULL;
    return strdup(factory ? gst_plugin_feature_get_name(GST_PLUGIN_FEATURE(factory)) : "");
}

char *cgst_pipeline_element_name(CGstPipeline *pipeline, int32_t index) {
    GstElement *element = element_at(pipeline, index);
    return element ? to_malloc(gst_element_get_name(element)) : strdup("");
}

char *cgst_pipeline_element_property(CGstPipeline *pipeline, int32_t index, const char *property) {
    GstElement *element = element_at(pipeline, index);
    if (!element) return NULL;
    GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), property);
    if (!spec || !(spec->flags & G_PARAM_READABLE)) return NULL;
    GValue value = G_VALUE_INIT;
    g_value_init(&value, spec->value_type);
    g_object_get_property(G_OBJECT(element), property, &value);
    char *text = NULL;
    if (G_VALUE_HOLDS_STRING(&value)) {
        const char *string = g_value_get_string(&value);
        text = string ? strdup(string) : NULL;
    } else {
        text = to_malloc(gst_value_serialize(&value));
    }
    g_value_unset(&value);
    return text;
}

int cgst_pipeline_takes_audio(CGstPipeline *pipeline) { return pipeline->audio_src != NULL; }

/* ---------------------------------------------------------------------------------------- */
/* Playing                                                                                   */

static GstBusSyncReply on_bus_message(GstBus *bus, GstMessage *message, gpointer data) {
    (void)bus;
    CGstPipeline *pipeline = data;
    switch (GST_MESSAGE_TYPE(message)) {
    case GST_MESSAGE_ERROR: {
        GError *error = NULL;
        char *debug = NULL;
        gst_message_parse_error(message, &error, &debug);
        char *text = g_strdup_printf("%s (%s)", error ? error->message : "unknown error",
                                     GST_MESSAGE_SRC_NAME(message) ? GST_MESSAGE_SRC_NAME(message) : "?");
        g_clear_error(&error);
        g_free(debug);
        g_mutex_lock(&pipeline->lock);
        gboolean report = !pipeline->reported && !pipeline->closing && pipeline->on_error;
        pipeline->reported = TRUE;
        if (!pipeline->failure) pipeline->failure = g_strdup(text);
        g_cond_broadcast(&pipeline->changed);
        g_mutex_unlock(&pipeline->lock);
        if (report) pipeline->on_error(pipeline->context, text);
        g_free(text);
        break;
    }
    case GST_MESSAGE_EOS:
        g_mutex_lock(&pipeline->lock);
        pipeline->eos = TRUE;
        g_cond_broadcast(&pipeline->changed);
        g_mutex_unlock(&pipeline->lock);
        break;
    default:
        break;
    }
    return GST_BUS_DROP;
}

int cgst_pipeline_start(CGstPipeline *pipeline, int32_t fps, void *context, CGstErrorCallback on_error, char **error) {
    pipeline->fps = fps > 0 ? fps : 30;
    pipeline->context = context;
    pipeline->on_error = on_error;
    /* Live sources timed by the samples; when the pipeline falls behind, old pictures go first. */
    g_object_set(pipeline->video_src, "is-live", TRUE, "format", GST_FORMAT_TIME, "do-timestamp", FALSE, "max-buffers", (guint64)3,
                 "leaky-type", 2 /* downstream: drop the oldest */, "block", FALSE, NULL);
    if (pipeline->audio_src) {
        GstCaps *caps = gst_caps_from_string("audio/x-raw,format=F32LE,rate=48000,channels=2,layout=interleaved");
        g_object_set(pipeline->audio_src, "is-live", TRUE, "format", GST_FORMAT_TIME, "do-timestamp", FALSE, "caps", caps, "max-buffers",
                     (guint64)50, "leaky-type", 2, "block", FALSE, NULL);
        gst_caps_unref(caps);
    }
    GstBus *bus = gst_element_get_bus(pipeline->pipeline);
    gst_bus_set_sync_handler(bus, on_bus_message, pipeline, NULL);
    gst_object_unref(bus);

    /* The pipeline's clock is the monotonic system clock, so sample times map onto it. */
    GstClock *clock = gst_system_clock_obtain();
    g_object_set(clock, "clock-type", GST_CLOCK_TYPE_MONOTONIC, NULL);
    gst_pipeline_use_clock(GST_PIPELINE(pipeline->pipeline), clock);
    gst_object_unref(clock);

    if (gst_element_set_state(pipeline->pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        g_mutex_lock(&pipeline->lock);
        char *failure = pipeline->failure ? g_strdup(pipeline->failure) : NULL;
        g_mutex_unlock(&pipeline->lock);
        set_error(error, "the pipeline did not start%s%s", failure ? ": " : "", failure ? failure : "");
        g_free(failure);
        return -1;
    }
    return 0;
}

void cgst_pipeline_free(CGstPipeline *pipeline) {
    if (!pipeline) return;
    g_mutex_lock(&pipeline->lock);
    pipeline->closing = TRUE;
    g_mutex_unlock(&pipeline->lock);
    gst_element_set_state(pipeline->pipeline, GST_STATE_NULL);
    GstBus *bus = gst_element_get_bus(pipeline->pipeline);
    gst_bus_set_sync_handler(bus, NULL, NULL, NULL);
    gst_object_unref(bus);
    if (pipeline->video_src) gst_object_unref(pipeline->video_src);
    if (pipeline->audio_src) gst_object_unref(pipeline->audio_src);
    g_ptr_array_unref(pipeline->elements);
    gst_object_unref(pipeline->pipeline);
    g_free(pipeline->failure);
    g_mutex_clear(&pipeline->lock);
    g_cond_clear(&pipeline->changed);
    g_free(pipeline);
}

/* Monotonic nanoseconds to the pipeline's running time; none if before it started. */
static GstClockTime running_time(CGstPipeline *pipeline, int64_t pts_ns) {
    GstClockTime base = gst_element_get_base_time(pipeline->pipeline);
    if (pts_ns < 0 || (GstClockTime)pts_ns < base) return GST_CLOCK_TIME_NONE;
    return (GstClockTime)pts_ns - base;
}

/* Colorimetry spelled out: without it GStreamer guesses by size (BT.709 from 720 lines up). */
static GstCaps *video_caps(CGstPipeline *pipeline, int32_t width, int32_t height, int32_t bt709, int32_t full_range) {
    const char *range = full_range ? "0_255" : "16_235";
    const char *matrix = bt709 ? "bt709" : "bt601";
    char *colorimetry = g_strdup_printf("%s:%s:srgb:bt709", range, matrix);
    GstCaps *caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "I420", "width", G_TYPE_INT, width, "height", G_TYPE_INT,
                                        height, "framerate", GST_TYPE_FRACTION, pipeline->fps, 1, "colorimetry", G_TYPE_STRING,
                                        colorimetry, NULL);
    g_free(colorimetry);
    return caps;
}

typedef struct {
    CGstReleaseCallback release;
    void *context;
} Release;

static void release_picture(gpointer data) {
    Release *r = data;
    r->release(r->context);
    g_free(r);
}

int cgst_pipeline_push_video(CGstPipeline *pipeline, const uint8_t *i420, size_t size, int32_t width, int32_t height,
                             int32_t bt709, int32_t full_range, int64_t pts_ns, CGstReleaseCallback release,
                             void *release_context) {
    GstClockTime pts = running_time(pipeline, pts_ns);
    if (!GST_CLOCK_TIME_IS_VALID(pts) || width <= 0 || height <= 0 || size < (size_t)width * height * 3 / 2) {
        if (release) release(release_context);
        return -1;
    }
    g_mutex_lock(&pipeline->lock);
    gboolean changed = width != pipeline->width || height != pipeline->height || bt709 != pipeline->bt709 ||
                       full_range != pipeline->full_range;
    pipeline->width = width;
    pipeline->height = height;
    pipeline->bt709 = bt709;
    pipeline->full_range = full_range;
    g_mutex_unlock(&pipeline->lock);
    if (changed) {
        GstCaps *caps = video_caps(pipeline, width, height, bt709, full_range);
        gst_app_src_set_caps(GST_APP_SRC(pipeline->video_src), caps);
        gst_caps_unref(caps);
    }
    GstBuffer *buffer;
    if (release) {
        Release *r = g_new(Release, 1);
        r->release = release;
        r->context = release_context;
        buffer = gst_buffer_new_wrapped_full(GST_MEMORY_FLAG_READONLY, (gpointer)i420, size, 0, size, r, release_picture);
    } else {
        buffer = gst_buffer_new_memdup(i420, size);
    }
    GST_BUFFER_PTS(buffer) = pts;
    GST_BUFFER_DTS(buffer) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION(buffer) = GST_SECOND / pipeline->fps;
    return gst_app_src_push_buffer(GST_APP_SRC(pipeline->video_src), buffer) == GST_FLOW_OK ? 0 : -1;
}

int cgst_pipeline_push_audio(CGstPipeline *pipeline, const float *samples, int32_t frames, int64_t pts_ns) {
    if (!pipeline->audio_src) return -1;
    GstClockTime pts = running_time(pipeline, pts_ns);
    if (!GST_CLOCK_TIME_IS_VALID(pts) || frames <= 0) return -1;
    GstBuffer *buffer = gst_buffer_new_memdup(samples, (gsize)frames * 2 * sizeof(float));
    GST_BUFFER_PTS(buffer) = pts;
    GST_BUFFER_DURATION(buffer) = gst_util_uint64_scale_int(frames, GST_SECOND, 48000);
    return gst_app_src_push_buffer(GST_APP_SRC(pipeline->audio_src), buffer) == GST_FLOW_OK ? 0 : -1;
}

int cgst_pipeline_finish(CGstPipeline *pipeline, int32_t timeout_ms, char **error) {
    g_mutex_lock(&pipeline->lock);
    gboolean had_pictures = pipeline->width > 0;
    g_mutex_unlock(&pipeline->lock);
    if (!had_pictures) {
        set_error(error, "no picture reached the pipeline");
        return -1;
    }
    gst_app_src_end_of_stream(GST_APP_SRC(pipeline->video_src));
    if (pipeline->audio_src) gst_app_src_end_of_stream(GST_APP_SRC(pipeline->audio_src));
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    g_mutex_lock(&pipeline->lock);
    while (!pipeline->eos && !pipeline->failure) {
        if (!g_cond_wait_until(&pipeline->changed, &pipeline->lock, deadline)) break;
    }
    gboolean eos = pipeline->eos;
    char *failure = pipeline->failure ? g_strdup(pipeline->failure) : NULL;
    pipeline->closing = TRUE;
    g_mutex_unlock(&pipeline->lock);
    if (!eos) set_error(error, "%s", failure ? failure : "the pipeline did not drain in time");
    g_free(failure);
    return eos ? 0 : -1;
}
