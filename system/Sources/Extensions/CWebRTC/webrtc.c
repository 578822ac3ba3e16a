/*
 * GStreamer at the edge of the WebRTC extension: the encoders, the tees and one webrtcbin per
 * peer. See include/CWebRTC.h for the contract.
 *
 *   appsrc(I420) ! x264enc ! h264 caps ! tee ─┬─ queue ! rtph264pay ─┐
 *                                             └─ (one branch per peer)├─ webrtcbin (peer n)
 *   appsrc(F32) ! audioconvert ! opusenc ! tee ─ queue ! rtpopuspay ─┘
 *
 * Each peer has its own payloaders so its payload types are the ones its offer chose, and
 * its own sequence numbers. A peer's PLI/FIR makes its RTP session send GstForceKeyUnit
 * upstream; queues and the tee pass it on to x264enc, which answers with a keyframe.
 */
#define _GNU_SOURCE
#ifndef GST_USE_UNSTABLE_API
#define GST_USE_UNSTABLE_API 1
#endif
#include "CWebRTC.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <libgen.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/rtp/gstrtcpbuffer.h>
#include <gst/sdp/sdp.h>
#include <gst/video/video.h>
#include <gst/webrtc/webrtc.h>

#define VIDEO_PT_DEFAULT 96
#define AUDIO_PT_DEFAULT 111

typedef struct Peer Peer;

struct CWebRTCSession {
    CWebRTCConfig config;
    char *stun_server;
    GstElement *pipeline;
    GstElement *video_src, *encoder, *video_tee;
    GstElement *audio_src, *audio_tee;
    GMutex lock; /* peers, next_peer, width/height/colour, closing */
    GHashTable *peers; /* id -> Peer* */
    int32_t next_peer;
    int32_t width, height;
    int32_t bt709, full_range; /* the pictures' colour matrix and range */
    int32_t kbps;
    gboolean closing;
};

struct Peer {
    int32_t id;
    CWebRTCSession *session;
    GstElement *webrtc;
    GstElement *video_queue, *video_pay, *audio_queue, *audio_pay;
    GstPad *video_tee_pad, *audio_tee_pad;
    GMutex lock;
    GCond changed;
    gboolean gathered;
    int32_t state;
    gboolean removed;
};

/* ---------------------------------------------------------------------------------------- */
/* Start-up                                                                                  */

static char *strdup_or_null(const char *s) { return s ? g_strdup(s) : NULL; }

static void set_error(char **error, const char *format, ...) G_GNUC_PRINTF(2, 3);
static void set_error(char **error, const char *format, ...) {
    if (!error) return;
    va_list args;
    va_start(args, format);
    char *message = g_strdup_vprintf(format, args);
    va_end(args);
    *error = strdup(message); /* freed with cwebrtc_free (free) */
    g_free(message);
}

void cwebrtc_free(void *pointer) { free(pointer); }

static char *to_malloc(char *glib_string) {
    if (!glib_string) return NULL;
    char *copy = strdup(glib_string);
    g_free(glib_string);
    return copy;
}

/* The plugins a send-only WebRTC session needs, nothing else. */
static const char *const needed_plugins[] = {
    "coreelements", /* queue, tee, capsfilter */
    "app",          /* appsrc */
    "videoconvertscale", /* not used in the pipeline; x264enc's caps query needs no more */
    "x264",         /* x264enc */
    "audioconvert",
    "opus",         /* opusenc */
    "rtp",          /* rtph264pay, rtpopuspay */
    "rtpmanager",   /* rtpbin, rtpfunnel, rtprtxsend, rtpstorage */
    "webrtc",       /* webrtcbin */
    "nice",         /* nicesrc, nicesink */
    "dtls",         /* dtlssrtpenc/dec */
    "srtp",         /* srtpenc/dec */
    NULL,
};

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

int cwebrtc_initialize(const char *registry_dir, char **error) {
    g_mutex_lock(&init_lock);
    if (initialized) {
        g_mutex_unlock(&init_lock);
        return 0;
    }
    /* A few malloc arenas, not one per streaming thread: resident memory counts against 50 MB. */
    mallopt(M_ARENA_MAX, 2);
    /* No scan of the system's plugins, no helper process, a registry only we use. */
    char *registry = g_build_filename(registry_dir ? registry_dir : g_get_tmp_dir(), "openreplaykit-webrtc-registry.bin", NULL);
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
    for (int index = 0; needed_plugins[index]; index++) {
        char *name = g_strdup_printf("libgst%s.so", needed_plugins[index]);
        char *path = g_build_filename(directory, name, NULL);
        GError *load_error = NULL;
        GstPlugin *plugin = gst_plugin_load_file(path, &load_error);
        if (!plugin) {
            /* videoconvertscale is a nicety; everything else is required. */
            if (strcmp(needed_plugins[index], "videoconvertscale") != 0) {
                set_error(error, "cannot load the GStreamer plugin %s: %s", path,
                          load_error ? load_error->message : "unknown");
                g_clear_error(&load_error);
                g_free(name);
                g_free(path);
                g_free(directory);
                g_mutex_unlock(&init_lock);
                return -1;
            }
            g_clear_error(&load_error);
        } else {
            gst_object_unref(plugin);
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
/* Promises with a deadline                                                                  */

typedef struct {
    GMutex lock;
    GCond cond;
    gboolean done;
} Waiter;

static void waiter_init(Waiter *w) {
    g_mutex_init(&w->lock);
    g_cond_init(&w->cond);
    w->done = FALSE;
}

static void waiter_clear(Waiter *w) {
    g_mutex_clear(&w->lock);
    g_cond_clear(&w->cond);
}

static void on_promise_changed(GstPromise *promise, gpointer data) {
    (void)promise;
    Waiter *w = data;
    g_mutex_lock(&w->lock);
    w->done = TRUE;
    g_cond_broadcast(&w->cond);
    g_mutex_unlock(&w->lock);
}

typedef struct {
    GstPromise *promise;
    Waiter *waiter; /* shared with the change function; freed by whoever is last */
    gint refs;
} TimedPromise;

static void waiter_unref(gpointer data) {
    TimedPromise *t = data;
    if (g_atomic_int_dec_and_test(&t->refs)) {
        waiter_clear(t->waiter);
        g_free(t->waiter);
        g_free(t);
    }
}

static void timed_promise_changed(GstPromise *promise, gpointer data) {
    TimedPromise *t = data;
    on_promise_changed(promise, t->waiter);
}

static TimedPromise *timed_promise_new(void) {
    TimedPromise *t = g_new0(TimedPromise, 1);
    t->waiter = g_new0(Waiter, 1);
    waiter_init(t->waiter);
    t->refs = 2; /* ours, and the promise's change function's */
    t->promise = gst_promise_new_with_change_func(timed_promise_changed, t, waiter_unref);
    return t;
}

/* The reply, or NULL on timeout/interruption. The reply belongs to the promise. */
static const GstStructure *timed_promise_wait(TimedPromise *t, int32_t timeout_ms) {
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    g_mutex_lock(&t->waiter->lock);
    while (!t->waiter->done) {
        if (!g_cond_wait_until(&t->waiter->cond, &t->waiter->lock, deadline)) break;
    }
    gboolean done = t->waiter->done;
    g_mutex_unlock(&t->waiter->lock);
    if (!done) {
        gst_promise_interrupt(t->promise);
        return NULL;
    }
    if (gst_promise_wait(t->promise) != GST_PROMISE_RESULT_REPLIED) return NULL;
    return gst_promise_get_reply(t->promise);
}

static void timed_promise_free(TimedPromise *t) {
    gst_promise_unref(t->promise); /* runs waiter_unref once */
    waiter_unref(t);
}

/* ---------------------------------------------------------------------------------------- */
/* The session                                                                               */

static GstElement *make(const char *factory, const char *name, char **error) {
    GstElement *element = gst_element_factory_make(factory, name);
    if (!element) set_error(error, "GStreamer has no element %s", factory);
    return element;
}

static Peer *peer_for_object(CWebRTCSession *session, GstObject *object) {
    Peer *found = NULL;
    g_mutex_lock(&session->lock);
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init(&iter, session->peers);
    while (!found && g_hash_table_iter_next(&iter, &key, &value)) {
        Peer *peer = value;
        if (object == GST_OBJECT(peer->webrtc) || gst_object_has_as_ancestor(object, GST_OBJECT(peer->webrtc)) ||
            object == GST_OBJECT(peer->video_pay) || object == GST_OBJECT(peer->audio_pay) ||
            object == GST_OBJECT(peer->video_queue) || object == GST_OBJECT(peer->audio_queue))
            found = peer;
    }
    int32_t id = found ? found->id : 0;
    g_mutex_unlock(&session->lock);
    return id ? found : NULL;
}

static GstBusSyncReply on_bus_message(GstBus *bus, GstMessage *message, gpointer data) {
    (void)bus;
    CWebRTCSession *session = data;
    if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
        GError *error = NULL;
        char *debug = NULL;
        gst_message_parse_error(message, &error, &debug);
        Peer *peer = peer_for_object(session, GST_MESSAGE_SRC(message));
        char *text = g_strdup_printf("%s (%s)", error ? error->message : "unknown error",
                                     GST_MESSAGE_SRC_NAME(message) ? GST_MESSAGE_SRC_NAME(message) : "?");
        if (session->config.on_error && !session->closing) session->config.on_error(session->config.context, peer ? peer->id : 0, text);
        g_free(text);
        g_clear_error(&error);
        g_free(debug);
    }
    return GST_BUS_DROP;
}

/* Colorimetry is spelled out: without it GStreamer guesses by size (BT.709 from 720 lines up),
 * and x264enc would tag replayd's BT.601 pictures as BT.709. The RGB is the screen's sRGB. */
static GstCaps *video_caps(CWebRTCSession *session, int32_t width, int32_t height, int32_t bt709, int32_t full_range) {
    GstVideoColorimetry colorimetry = {
        .range = full_range ? GST_VIDEO_COLOR_RANGE_0_255 : GST_VIDEO_COLOR_RANGE_16_235,
        .matrix = bt709 ? GST_VIDEO_COLOR_MATRIX_BT709 : GST_VIDEO_COLOR_MATRIX_BT601,
        .transfer = GST_VIDEO_TRANSFER_SRGB,
        .primaries = GST_VIDEO_COLOR_PRIMARIES_BT709,
    };
    gchar *name = gst_video_colorimetry_to_string(&colorimetry);
    GstCaps *caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "I420", "width", G_TYPE_INT, width, "height",
                                        G_TYPE_INT, height, "framerate", GST_TYPE_FRACTION, session->config.fps, 1, "colorimetry",
                                        G_TYPE_STRING, name, NULL);
    g_free(name);
    return caps;
}

CWebRTCSession *cwebrtc_session_new(const CWebRTCConfig *config, char **error) {
    if (!initialized) {
        set_error(error, "cwebrtc_initialize was not called");
        return NULL;
    }
    CWebRTCSession *session = g_new0(CWebRTCSession, 1);
    session->config = *config;
    session->stun_server = strdup_or_null(config->stun_server);
    session->config.stun_server = session->stun_server;
    if (session->config.fps <= 0) session->config.fps = 30;
    if (session->config.video_kbps <= 0) session->config.video_kbps = 1500;
    if (session->config.audio_bps <= 0) session->config.audio_bps = 64000;
    if (session->config.keyframe_interval <= 0) session->config.keyframe_interval = session->config.fps * 2;
    session->kbps = session->config.video_kbps;
    g_mutex_init(&session->lock);
    session->peers = g_hash_table_new(g_direct_hash, g_direct_equal);
    session->next_peer = 1;

    GstElement *pipeline = gst_pipeline_new("webrtc");
    session->pipeline = pipeline;
    GstElement *vsrc = make("appsrc", "video-src", error), *enc = make("x264enc", "encoder", error),
               *vcaps = make("capsfilter", NULL, error), *vtee = make("tee", "video-tee", error),
               *asrc = make("appsrc", "audio-src", error), *conv = make("audioconvert", NULL, error),
               *opus = make("opusenc", NULL, error), *atee = make("tee", "audio-tee", error);
    if (!vsrc || !enc || !vcaps || !vtee || !asrc || !conv || !opus || !atee) {
        GstElement *all[] = {vsrc, enc, vcaps, vtee, asrc, conv, opus, atee};
        for (size_t i = 0; i < G_N_ELEMENTS(all); i++)
            if (all[i]) gst_object_unref(gst_object_ref_sink(all[i]));
        gst_object_unref(pipeline);
        g_hash_table_unref(session->peers);
        g_free(session->stun_server);
        g_free(session);
        return NULL;
    }
    session->video_src = vsrc;
    session->encoder = enc;
    session->video_tee = vtee;
    session->audio_src = asrc;
    session->audio_tee = atee;

    /* Live sources timed by the samples; when the pipeline falls behind, old pictures go first. */
    session->width = 640;
    session->height = 480;
    GstCaps *vcap = video_caps(session, session->width, session->height, session->bt709, session->full_range);
    g_object_set(vsrc, "is-live", TRUE, "format", GST_FORMAT_TIME, "do-timestamp", FALSE, "caps", vcap, "max-buffers",
                 (guint64)3, "leaky-type", 2 /* downstream: drop the oldest */, "block", FALSE, NULL);
    gst_caps_unref(vcap);
    gst_util_set_object_arg(G_OBJECT(enc), "tune", "zerolatency");
    gst_util_set_object_arg(G_OBJECT(enc), "speed-preset", "veryfast");
    g_object_set(enc, "bitrate", (guint)session->kbps, "key-int-max", (guint)session->config.keyframe_interval, "bframes", 0,
                 "aud", FALSE, "vbv-buf-capacity", 500, "threads", 2, "rc-lookahead", 0, NULL);
    GstCaps *h264 = gst_caps_from_string("video/x-h264,profile=constrained-baseline,stream-format=byte-stream,alignment=au");
    g_object_set(vcaps, "caps", h264, NULL);
    gst_caps_unref(h264);
    g_object_set(vtee, "allow-not-linked", TRUE, NULL);

    GstCaps *acap = gst_caps_from_string("audio/x-raw,format=F32LE,rate=48000,channels=2,layout=interleaved");
    g_object_set(asrc, "is-live", TRUE, "format", GST_FORMAT_TIME, "do-timestamp", FALSE, "caps", acap, "max-buffers",
                 (guint64)50, "leaky-type", 2, "block", FALSE, NULL);
    gst_caps_unref(acap);
    g_object_set(opus, "bitrate", session->config.audio_bps, NULL);
    gst_util_set_object_arg(G_OBJECT(opus), "frame-size", "20");
    g_object_set(atee, "allow-not-linked", TRUE, NULL);

    gst_bin_add_many(GST_BIN(pipeline), vsrc, enc, vcaps, vtee, asrc, conv, opus, atee, NULL);
    if (!gst_element_link_many(vsrc, enc, vcaps, vtee, NULL) || !gst_element_link_many(asrc, conv, opus, atee, NULL)) {
        set_error(error, "cannot link the encoders");
        gst_object_unref(pipeline);
        g_hash_table_unref(session->peers);
        g_free(session->stun_server);
        g_free(session);
        return NULL;
    }
    GstBus *bus = gst_element_get_bus(pipeline);
    gst_bus_set_sync_handler(bus, on_bus_message, session, NULL);
    gst_object_unref(bus);

    /* The pipeline's clock is the monotonic system clock, so sample times map onto it. */
    GstClock *clock = gst_system_clock_obtain();
    g_object_set(clock, "clock-type", GST_CLOCK_TYPE_MONOTONIC, NULL);
    gst_pipeline_use_clock(GST_PIPELINE(pipeline), clock);
    gst_object_unref(clock);

    if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        set_error(error, "the GStreamer pipeline did not start");
        gst_element_set_state(pipeline, GST_STATE_NULL);
        gst_object_unref(pipeline);
        g_hash_table_unref(session->peers);
        g_free(session->stun_server);
        g_free(session);
        return NULL;
    }
    return session;
}

static void peer_teardown(Peer *peer);

void cwebrtc_session_free(CWebRTCSession *session) {
    if (!session) return;
    g_mutex_lock(&session->lock);
    session->closing = TRUE;
    GList *peers = g_hash_table_get_values(session->peers);
    g_hash_table_remove_all(session->peers);
    g_mutex_unlock(&session->lock);
    for (GList *item = peers; item; item = item->next) peer_teardown(item->data);
    g_list_free(peers);
    gst_element_set_state(session->pipeline, GST_STATE_NULL);
    GstBus *bus = gst_element_get_bus(session->pipeline);
    gst_bus_set_sync_handler(bus, NULL, NULL, NULL);
    gst_object_unref(bus);
    gst_object_unref(session->pipeline);
    g_hash_table_unref(session->peers);
    g_mutex_clear(&session->lock);
    g_free(session->stun_server);
    g_free(session);
}

/* Monotonic nanoseconds to the pipeline's running time; -1 if before it started. */
static GstClockTime running_time(CWebRTCSession *session, int64_t pts_ns) {
    GstClockTime base = gst_element_get_base_time(session->pipeline);
    if (pts_ns < 0 || (GstClockTime)pts_ns < base) return GST_CLOCK_TIME_NONE;
    return (GstClockTime)pts_ns - base;
}

typedef struct {
    CWebRTCReleaseCallback release;
    void *context;
} Release;

static void release_picture(gpointer data) {
    Release *r = data;
    r->release(r->context);
    g_free(r);
}

int cwebrtc_push_video(CWebRTCSession *session, const uint8_t *i420, size_t size, int32_t width, int32_t height,
                       int32_t bt709, int32_t full_range, int64_t pts_ns, CWebRTCReleaseCallback release,
                       void *release_context) {
    GstClockTime pts = running_time(session, pts_ns);
    if (!GST_CLOCK_TIME_IS_VALID(pts) || width <= 0 || height <= 0 || size < (size_t)width * height * 3 / 2) {
        if (release) release(release_context);
        return -1;
    }
    g_mutex_lock(&session->lock);
    gboolean changed = width != session->width || height != session->height || bt709 != session->bt709 ||
                       full_range != session->full_range;
    session->width = width;
    session->height = height;
    session->bt709 = bt709;
    session->full_range = full_range;
    g_mutex_unlock(&session->lock);
    if (changed) {
        GstCaps *caps = video_caps(session, width, height, bt709, full_range);
        gst_app_src_set_caps(GST_APP_SRC(session->video_src), caps);
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
    GST_BUFFER_DURATION(buffer) = GST_SECOND / session->config.fps;
    return gst_app_src_push_buffer(GST_APP_SRC(session->video_src), buffer) == GST_FLOW_OK ? 0 : -1;
}

int cwebrtc_push_audio(CWebRTCSession *session, const float *samples, int32_t frames, int64_t pts_ns) {
    GstClockTime pts = running_time(session, pts_ns);
    if (!GST_CLOCK_TIME_IS_VALID(pts) || frames <= 0) return -1;
    GstBuffer *buffer = gst_buffer_new_memdup(samples, (gsize)frames * 2 * sizeof(float));
    GST_BUFFER_PTS(buffer) = pts;
    GST_BUFFER_DURATION(buffer) = gst_util_uint64_scale_int(frames, GST_SECOND, 48000);
    return gst_app_src_push_buffer(GST_APP_SRC(session->audio_src), buffer) == GST_FLOW_OK ? 0 : -1;
}

void cwebrtc_request_keyframe(CWebRTCSession *session) {
    GstPad *pad = gst_element_get_static_pad(session->encoder, "src");
    if (!pad) return;
    gst_pad_send_event(pad, gst_video_event_new_upstream_force_key_unit(GST_CLOCK_TIME_NONE, TRUE, 0));
    gst_object_unref(pad);
}

void cwebrtc_set_video_bitrate(CWebRTCSession *session, int32_t kbps) {
    if (kbps <= 0) return;
    g_mutex_lock(&session->lock);
    gboolean changed = session->kbps != kbps;
    session->kbps = kbps;
    g_mutex_unlock(&session->lock);
    /* x264enc reconfigures the running encoder when this changes in PLAYING. */
    if (changed) g_object_set(session->encoder, "bitrate", (guint)kbps, NULL);
}

int32_t cwebrtc_video_bitrate(CWebRTCSession *session) {
    g_mutex_lock(&session->lock);
    int32_t kbps = session->kbps;
    g_mutex_unlock(&session->lock);
    return kbps;
}

/* ---------------------------------------------------------------------------------------- */
/* Peers                                                                                     */

static void on_connection_state(GObject *webrtc, GParamSpec *spec, gpointer data) {
    (void)spec;
    Peer *peer = data;
    GstWebRTCPeerConnectionState state;
    g_object_get(webrtc, "connection-state", &state, NULL);
    g_mutex_lock(&peer->lock);
    peer->state = (int32_t)state;
    gboolean removed = peer->removed;
    g_cond_broadcast(&peer->changed);
    g_mutex_unlock(&peer->lock);
    CWebRTCSession *session = peer->session;
    if (state == GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED) cwebrtc_request_keyframe(session);
    if (!removed && !session->closing && session->config.on_state)
        session->config.on_state(session->config.context, peer->id, (int32_t)state);
}

static void on_gathering_state(GObject *webrtc, GParamSpec *spec, gpointer data) {
    (void)spec;
    Peer *peer = data;
    GstWebRTCICEGatheringState state;
    g_object_get(webrtc, "ice-gathering-state", &state, NULL);
    if (state != GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE) return;
    g_mutex_lock(&peer->lock);
    peer->gathered = TRUE;
    g_cond_broadcast(&peer->changed);
    g_mutex_unlock(&peer->lock);
}

/* Links queue -> payloader -> a new send-only transceiver of `webrtc`; the tee comes later
 * (link_tee), once the branch runs. */
static gboolean link_branch(Peer *peer, GstElement *queue, GstElement *pay, gboolean video, char **error) {
    GstBin *pipeline = GST_BIN(peer->session->pipeline);
    g_object_set(queue, "leaky", 2, "max-size-buffers", 0, "max-size-bytes", 0, "max-size-time", (guint64)(GST_SECOND / 2), NULL);
    gst_bin_add_many(pipeline, queue, pay, NULL);
    if (!gst_element_link(queue, pay)) {
        set_error(error, "cannot link the payloader");
        return FALSE;
    }
    GstPad *sink = gst_element_request_pad_simple(peer->webrtc, "sink_%u");
    GstPad *pay_src = gst_element_get_static_pad(pay, "src");
    gboolean linked = sink && gst_pad_link(pay_src, sink) == GST_PAD_LINK_OK;
    gst_object_unref(pay_src);
    if (!linked) {
        if (sink) gst_object_unref(sink);
        set_error(error, "cannot link to webrtcbin");
        return FALSE;
    }
    GstWebRTCRTPTransceiver *transceiver = NULL;
    g_object_get(sink, "transceiver", &transceiver, NULL);
    gst_object_unref(sink);
    if (transceiver) {
        g_object_set(transceiver, "direction", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY, NULL);
        if (video) g_object_set(transceiver, "do-nack", TRUE, NULL);
        gst_object_unref(transceiver);
    }
    return TRUE;
}

/* Feeds a running branch from `tee`. Only once the queue is PLAYING: a buffer that meets a
 * queue still in NULL returns FLUSHING, and that stops the encoder's source for good (the
 * audio of a viewer who joined at such a moment never flowed). */
static gboolean link_tee(GstElement *tee, GstElement *queue, GstPad **tee_pad, char **error) {
    *tee_pad = gst_element_request_pad_simple(tee, "src_%u");
    GstPad *queue_sink = gst_element_get_static_pad(queue, "sink");
    gboolean linked = gst_pad_link(*tee_pad, queue_sink) == GST_PAD_LINK_OK;
    gst_object_unref(queue_sink);
    if (!linked) {
        set_error(error, "cannot link to the tee");
        return FALSE;
    }
    return TRUE;
}

/* A new peer's elements, linked and running, before any negotiation. */
static Peer *peer_new(CWebRTCSession *session, int video_pt, int audio_pt, char **error) {
    Peer *peer = g_new0(Peer, 1);
    peer->session = session;
    g_mutex_init(&peer->lock);
    g_cond_init(&peer->changed);
    g_mutex_lock(&session->lock);
    if (session->closing) {
        g_mutex_unlock(&session->lock);
        set_error(error, "the broadcast is ending");
        g_mutex_clear(&peer->lock);
        g_cond_clear(&peer->changed);
        g_free(peer);
        return NULL;
    }
    peer->id = session->next_peer++;
    g_mutex_unlock(&session->lock);

    char name[32];
    snprintf(name, sizeof name, "peer%d", peer->id);
    peer->webrtc = make("webrtcbin", name, error);
    peer->video_queue = make("queue", NULL, error);
    peer->video_pay = make("rtph264pay", NULL, error);
    peer->audio_queue = make("queue", NULL, error);
    peer->audio_pay = make("rtpopuspay", NULL, error);
    if (!peer->webrtc || !peer->video_queue || !peer->video_pay || !peer->audio_queue || !peer->audio_pay) {
        GstElement *all[] = {peer->webrtc, peer->video_queue, peer->video_pay, peer->audio_queue, peer->audio_pay};
        for (size_t i = 0; i < G_N_ELEMENTS(all); i++)
            if (all[i]) gst_object_unref(gst_object_ref_sink(all[i]));
        g_mutex_clear(&peer->lock);
        g_cond_clear(&peer->changed);
        g_free(peer);
        return NULL;
    }
    gst_util_set_object_arg(G_OBJECT(peer->webrtc), "bundle-policy", "max-bundle");
    if (session->stun_server) g_object_set(peer->webrtc, "stun-server", session->stun_server, NULL);
    /* UDP only: fewer sockets and candidates; every browser does UDP. */
    GObject *ice = NULL;
    g_object_get(peer->webrtc, "ice-agent", &ice, NULL);
    if (ice) {
        if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "ice-tcp")) g_object_set(ice, "ice-tcp", FALSE, NULL);
        g_object_unref(ice);
    }
    g_object_set(peer->video_pay, "pt", (guint)video_pt, "config-interval", -1, NULL);
    gst_util_set_object_arg(G_OBJECT(peer->video_pay), "aggregate-mode", "zero-latency");
    g_object_set(peer->audio_pay, "pt", (guint)audio_pt, NULL);
    gst_bin_add(GST_BIN(session->pipeline), peer->webrtc);
    g_signal_connect(peer->webrtc, "notify::connection-state", G_CALLBACK(on_connection_state), peer);
    g_signal_connect(peer->webrtc, "notify::ice-gathering-state", G_CALLBACK(on_gathering_state), peer);

    g_mutex_lock(&session->lock);
    g_hash_table_insert(session->peers, GINT_TO_POINTER(peer->id), peer);
    g_mutex_unlock(&session->lock);

    if (!link_branch(peer, peer->video_queue, peer->video_pay, TRUE, error) ||
        !link_branch(peer, peer->audio_queue, peer->audio_pay, FALSE, error)) {
        cwebrtc_peer_remove(session, peer->id);
        return NULL;
    }
    gst_element_sync_state_with_parent(peer->webrtc);
    gst_element_sync_state_with_parent(peer->video_pay);
    gst_element_sync_state_with_parent(peer->audio_pay);
    gst_element_sync_state_with_parent(peer->video_queue);
    gst_element_sync_state_with_parent(peer->audio_queue);
    if (!link_tee(session->video_tee, peer->video_queue, &peer->video_tee_pad, error) ||
        !link_tee(session->audio_tee, peer->audio_queue, &peer->audio_tee_pad, error)) {
        cwebrtc_peer_remove(session, peer->id);
        return NULL;
    }
    return peer;
}

static Peer *peer_take(CWebRTCSession *session, int32_t id) {
    g_mutex_lock(&session->lock);
    Peer *peer = g_hash_table_lookup(session->peers, GINT_TO_POINTER(id));
    if (peer) g_hash_table_remove(session->peers, GINT_TO_POINTER(id));
    g_mutex_unlock(&session->lock);
    return peer;
}

static Peer *peer_lookup(CWebRTCSession *session, int32_t id) {
    g_mutex_lock(&session->lock);
    Peer *peer = g_hash_table_lookup(session->peers, GINT_TO_POINTER(id));
    g_mutex_unlock(&session->lock);
    return peer;
}

static GstPadProbeReturn unlink_when_idle(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    (void)info;
    GstPad *peer_pad = gst_pad_get_peer(pad);
    if (peer_pad) {
        gst_pad_unlink(pad, peer_pad);
        gst_object_unref(peer_pad);
    }
    Waiter *w = data;
    on_promise_changed(NULL, w);
    return GST_PAD_PROBE_REMOVE;
}

static void detach_from_tee(GstElement *tee, GstPad *tee_pad) {
    if (!tee_pad) return;
    Waiter w;
    waiter_init(&w);
    gst_pad_add_probe(tee_pad, GST_PAD_PROBE_TYPE_IDLE, unlink_when_idle, &w, NULL);
    gint64 deadline = g_get_monotonic_time() + G_TIME_SPAN_SECOND;
    g_mutex_lock(&w.lock);
    while (!w.done && g_cond_wait_until(&w.cond, &w.lock, deadline)) {}
    g_mutex_unlock(&w.lock);
    waiter_clear(&w);
    gst_element_release_request_pad(tee, tee_pad);
    gst_object_unref(tee_pad);
}

static void peer_teardown(Peer *peer) {
    CWebRTCSession *session = peer->session;
    g_mutex_lock(&peer->lock);
    peer->removed = TRUE;
    g_mutex_unlock(&peer->lock);
    detach_from_tee(session->video_tee, peer->video_tee_pad);
    detach_from_tee(session->audio_tee, peer->audio_tee_pad);
    /* webrtcbin first: until negotiated it blocks its sink pads, and the queues' threads wait there. */
    GstElement *elements[] = {peer->webrtc, peer->video_queue, peer->video_pay, peer->audio_queue, peer->audio_pay};
    for (size_t i = 0; i < G_N_ELEMENTS(elements); i++) {
        gst_element_set_state(elements[i], GST_STATE_NULL);
    }
    g_signal_handlers_disconnect_by_data(peer->webrtc, peer);
    for (size_t i = 0; i < G_N_ELEMENTS(elements); i++) {
        if (GST_OBJECT_PARENT(elements[i])) gst_bin_remove(GST_BIN(session->pipeline), elements[i]);
        else gst_object_unref(gst_object_ref_sink(elements[i]));
    }
    g_mutex_clear(&peer->lock);
    g_cond_clear(&peer->changed);
    g_free(peer);
}

void cwebrtc_peer_remove(CWebRTCSession *session, int32_t id) {
    Peer *peer = peer_take(session, id);
    if (peer) peer_teardown(peer);
}

/* Waits until ICE gathering completes, then returns the local description's SDP (malloc). */
static char *local_sdp_when_gathered(Peer *peer, int32_t timeout_ms) {
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    g_mutex_lock(&peer->lock);
    while (!peer->gathered && g_cond_wait_until(&peer->changed, &peer->lock, deadline)) {}
    g_mutex_unlock(&peer->lock);
    /* Even without "complete" (a slow STUN server), what was gathered so far is sent. */
    GstWebRTCSessionDescription *local = NULL;
    g_object_get(peer->webrtc, "local-description", &local, NULL);
    if (!local) return NULL;
    char *text = to_malloc(gst_sdp_message_as_text(local->sdp));
    gst_webrtc_session_description_free(local);
    return text;
}

static gboolean set_description(Peer *peer, const char *signal, GstWebRTCSessionDescription *description, int32_t timeout_ms,
                                char **error) {
    TimedPromise *t = timed_promise_new();
    g_signal_emit_by_name(peer->webrtc, signal, description, t->promise);
    const GstStructure *reply = timed_promise_wait(t, timeout_ms);
    gboolean ok = TRUE;
    GError *failure = NULL;
    if (reply && gst_structure_get(reply, "error", G_TYPE_ERROR, &failure, NULL) && failure) {
        set_error(error, "%s failed: %s", signal, failure->message);
        g_clear_error(&failure);
        ok = FALSE;
    } else if (!reply && !t->waiter->done) {
        set_error(error, "%s did not finish in time", signal);
        ok = FALSE;
    }
    timed_promise_free(t);
    return ok;
}

/* Emits create-offer or create-answer and returns the description, or NULL. */
static GstWebRTCSessionDescription *create_description(Peer *peer, gboolean offer, int32_t timeout_ms, char **error) {
    TimedPromise *t = timed_promise_new();
    g_signal_emit_by_name(peer->webrtc, offer ? "create-offer" : "create-answer", NULL, t->promise);
    const GstStructure *reply = timed_promise_wait(t, timeout_ms);
    GstWebRTCSessionDescription *description = NULL;
    GError *failure = NULL;
    if (reply && gst_structure_get(reply, offer ? "offer" : "answer", GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &description, NULL)) {
    } else if (reply && gst_structure_get(reply, "error", G_TYPE_ERROR, &failure, NULL) && failure) {
        set_error(error, "cannot create the %s: %s", offer ? "offer" : "answer", failure->message);
        g_clear_error(&failure);
    } else {
        set_error(error, "webrtcbin made no %s", offer ? "offer" : "answer");
    }
    timed_promise_free(t);
    return description;
}

/* True once both payloaders have negotiated (the first keyframe and audio went through), so
 * the offer carries the H.264 parameters. */
static gboolean has_caps(GstElement *element) {
    GstPad *pad = gst_element_get_static_pad(element, "src");
    gboolean ready = gst_pad_has_current_caps(pad);
    gst_object_unref(pad);
    return ready;
}

/* Waits until the payloaders have negotiated (video: a picture went through; audio: a period),
 * so the SDP carries their parameters and SSRCs. Audio is waited for only a second: without
 * an audio server there is none, and the broadcast goes on as video only. */
static void wait_for_payloaders(Peer *peer, gint64 deadline) {
    gint64 audio_deadline = MIN(deadline, g_get_monotonic_time() + G_TIME_SPAN_SECOND);
    while (g_get_monotonic_time() < deadline) {
        gboolean video = has_caps(peer->video_pay);
        gboolean audio = has_caps(peer->audio_pay) || g_get_monotonic_time() >= audio_deadline;
        if (video && audio) break;
        g_usleep(10000);
    }
}

int32_t cwebrtc_peer_offer(CWebRTCSession *session, int32_t timeout_ms, char **offer, char **error) {
    Peer *peer = peer_new(session, VIDEO_PT_DEFAULT, AUDIO_PT_DEFAULT, error);
    if (!peer) return -1;
    int32_t id = peer->id;
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    cwebrtc_request_keyframe(session);
    wait_for_payloaders(peer, deadline);
    GstWebRTCSessionDescription *description = create_description(peer, TRUE, timeout_ms, error);
    if (!description || !set_description(peer, "set-local-description", description, timeout_ms, error)) {
        if (description) gst_webrtc_session_description_free(description);
        cwebrtc_peer_remove(session, id);
        return -1;
    }
    gst_webrtc_session_description_free(description);
    int32_t left = (int32_t)MAX(100, (deadline - g_get_monotonic_time()) / 1000);
    char *sdp = local_sdp_when_gathered(peer, left);
    if (!sdp) {
        set_error(error, "no local description");
        cwebrtc_peer_remove(session, id);
        return -1;
    }
    *offer = sdp;
    return id;
}

int cwebrtc_peer_set_answer(CWebRTCSession *session, int32_t id, const char *answer, char **error) {
    Peer *peer = peer_lookup(session, id);
    if (!peer) {
        set_error(error, "no such peer");
        return -1;
    }
    GstSDPMessage *sdp = NULL;
    gst_sdp_message_new(&sdp);
    if (gst_sdp_message_parse_buffer((const guint8 *)answer, (guint)strlen(answer), sdp) != GST_SDP_OK || !sdp->medias ||
        gst_sdp_message_medias_len(sdp) == 0) {
        gst_sdp_message_free(sdp);
        set_error(error, "the answer is not valid SDP");
        return -1;
    }
    GstWebRTCSessionDescription *description = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_ANSWER, sdp);
    gboolean ok = set_description(peer, "set-remote-description", description, 5000, error);
    gst_webrtc_session_description_free(description);
    return ok ? 0 : -1;
}

/* The payload type the offer gives `encoding` (e.g. "H264", "opus"), preferring H.264 in
 * packetization mode 1 with a constrained-baseline profile; -1 if none. */
static int offered_payload_type(const GstSDPMessage *sdp, const char *media_kind, const char *encoding) {
    int best = -1, best_score = -1;
    for (guint m = 0; m < gst_sdp_message_medias_len(sdp); m++) {
        const GstSDPMedia *media = gst_sdp_message_get_media(sdp, m);
        if (g_strcmp0(gst_sdp_media_get_media(media), media_kind) != 0) continue;
        for (guint f = 0; f < gst_sdp_media_formats_len(media); f++) {
            int pt = atoi(gst_sdp_media_get_format(media, f));
            GstCaps *caps = gst_sdp_media_get_caps_from_media(media, pt);
            if (!caps) continue;
            const GstStructure *s = gst_caps_get_structure(caps, 0);
            const char *name = gst_structure_get_string(s, "encoding-name");
            int score = -1;
            if (name && g_ascii_strcasecmp(name, encoding) == 0) {
                score = 0;
                const char *mode = gst_structure_get_string(s, "packetization-mode");
                const char *profile = gst_structure_get_string(s, "profile-level-id");
                if (g_ascii_strcasecmp(encoding, "H264") == 0) {
                    if (g_strcmp0(mode, "1") != 0) score = -1;
                    else if (profile && g_ascii_strncasecmp(profile, "42e0", 4) == 0) score = 2;
                    else if (profile && g_ascii_strncasecmp(profile, "42", 2) == 0) score = 1;
                }
            }
            gst_caps_unref(caps);
            if (score > best_score) {
                best_score = score;
                best = pt;
            }
        }
        break;
    }
    return best;
}

int32_t cwebrtc_peer_answer(CWebRTCSession *session, const char *offer, int32_t timeout_ms, char **answer, char **error) {
    GstSDPMessage *sdp = NULL;
    gst_sdp_message_new(&sdp);
    if (gst_sdp_message_parse_buffer((const guint8 *)offer, (guint)strlen(offer), sdp) != GST_SDP_OK ||
        gst_sdp_message_medias_len(sdp) == 0) {
        gst_sdp_message_free(sdp);
        set_error(error, "the offer is not valid SDP");
        return -1;
    }
    int video_pt = offered_payload_type(sdp, "video", "H264");
    int audio_pt = offered_payload_type(sdp, "audio", "OPUS");
    if (video_pt < 0) {
        gst_sdp_message_free(sdp);
        set_error(error, "the offer has no H.264 in packetization mode 1");
        return -1;
    }
    Peer *peer = peer_new(session, video_pt, audio_pt < 0 ? AUDIO_PT_DEFAULT : audio_pt, error);
    if (!peer) {
        gst_sdp_message_free(sdp);
        return -1;
    }
    int32_t id = peer->id;
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    wait_for_payloaders(peer, deadline);
    GstWebRTCSessionDescription *remote = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, sdp);
    gboolean ok = set_description(peer, "set-remote-description", remote, timeout_ms, error);
    gst_webrtc_session_description_free(remote);
    GstWebRTCSessionDescription *local = ok ? create_description(peer, FALSE, timeout_ms, error) : NULL;
    if (!local || !set_description(peer, "set-local-description", local, timeout_ms, error)) {
        if (local) gst_webrtc_session_description_free(local);
        cwebrtc_peer_remove(session, id);
        return -1;
    }
    gst_webrtc_session_description_free(local);
    int32_t left = (int32_t)MAX(100, (deadline - g_get_monotonic_time()) / 1000);
    char *text = local_sdp_when_gathered(peer, left);
    if (!text) {
        set_error(error, "no local description");
        cwebrtc_peer_remove(session, id);
        return -1;
    }
    *answer = text;
    cwebrtc_request_keyframe(session);
    return id;
}

/* ---------------------------------------------------------------------------------------- */
/* Statistics                                                                                */

/*
 * Straight from the peer's RTP session(s) inside webrtcbin: each of our sources' counters and
 * the last receiver report about it (fraction lost, cumulative loss, round trip). webrtcbin's
 * own get-stats in 1.22 lists only one outbound stream per bundled transport, so the sources
 * are read where it reads them from.
 */
static guint64 number(const GstStructure *s, const char *field) {
    const GValue *value = gst_structure_get_value(s, field);
    if (!value) return 0;
    if (G_VALUE_HOLDS_UINT64(value)) return g_value_get_uint64(value);
    if (G_VALUE_HOLDS_INT64(value)) return (guint64)MAX(0, g_value_get_int64(value));
    if (G_VALUE_HOLDS_UINT(value)) return g_value_get_uint(value);
    if (G_VALUE_HOLDS_INT(value)) return (guint64)MAX(0, g_value_get_int(value));
    return 0;
}

/* Our own sources: what was sent, and the feedback counters. */
static void add_own_source(const GstStructure *source, CWebRTCPeerStats *out, GArray *video_ssrcs) {
    gboolean internal = FALSE, sender = FALSE;
    gint clock_rate = -1;
    guint ssrc = 0;
    gst_structure_get_boolean(source, "internal", &internal);
    gst_structure_get_boolean(source, "is-sender", &sender);
    gst_structure_get_int(source, "clock-rate", &clock_rate);
    gst_structure_get_uint(source, "ssrc", &ssrc);
    if (!internal || !sender) return;
    if (clock_rate != 90000) {
        out->audio_packets_sent += number(source, "packets-sent");
        return;
    }
    g_array_append_val(video_ssrcs, ssrc);
    out->video_packets_sent += number(source, "packets-sent");
    out->video_bytes_sent += number(source, "octets-sent");
    out->nack_received += number(source, "recv-nack-count");
    out->pli_received += number(source, "recv-pli-count");
    out->fir_received += number(source, "recv-fir-count");
}

/* The receiver's sources: the last report block each sent, about one of our SSRCs. */
static void add_report(const GstStructure *source, CWebRTCPeerStats *out, GArray *video_ssrcs) {
    gboolean internal = FALSE, have_rb = FALSE;
    guint about = 0;
    gst_structure_get_boolean(source, "internal", &internal);
    gst_structure_get_boolean(source, "have-rb", &have_rb);
    if (internal || !have_rb || !gst_structure_get_uint(source, "rb-ssrc", &about)) return;
    gboolean video = FALSE;
    for (guint i = 0; i < video_ssrcs->len; i++) video = video || g_array_index(video_ssrcs, guint, i) == about;
    if (!video) return;
    guint fraction = 0, round_trip = 0, jitter = 0;
    gint lost = 0;
    gst_structure_get_uint(source, "rb-fractionlost", &fraction);
    gst_structure_get_int(source, "rb-packetslost", &lost);
    gst_structure_get_uint(source, "rb-round-trip", &round_trip);
    gst_structure_get_uint(source, "rb-jitter", &jitter);
    out->have_report = 1;
    out->fraction_lost = MAX(out->fraction_lost, fraction / 256.0);
    out->packets_lost += lost;
    out->round_trip_time = MAX(out->round_trip_time, round_trip / 65536.0);
    out->jitter = MAX(out->jitter, jitter / 90000.0);
}

/* The receiver's estimate (REMB: a payload-specific feedback, application layer, whose FCI is
 * "REMB", a count of SSRCs, then 6 bits of exponent and 18 of mantissa), kept on the RTP session
 * (1 + kbit/s) for cwebrtc_peer_stats. Called on the session's RTCP thread. */
static void on_feedback_rtcp(GObject *rtp_session, guint type, guint fbtype, guint sender_ssrc, guint media_ssrc,
                             GstBuffer *fci, gpointer data) {
    (void)sender_ssrc, (void)media_ssrc, (void)data;
    if (type != GST_RTCP_TYPE_PSFB || fbtype != GST_RTCP_PSFB_TYPE_AFB || !fci) return;
    GstMapInfo map;
    if (!gst_buffer_map(fci, &map, GST_MAP_READ)) return;
    if (map.size >= 8 && memcmp(map.data, "REMB", 4) == 0) {
        guint exponent = map.data[5] >> 2;
        guint64 mantissa = ((guint64)(map.data[5] & 0x3) << 16) | ((guint64)map.data[6] << 8) | map.data[7];
        guint64 kbps = exponent < 46 ? (mantissa << exponent) / 1000 : G_MAXUINT32;
        g_object_set_data(rtp_session, "cwebrtc-remb-kbps", GUINT_TO_POINTER((guint)MIN(kbps, G_MAXUINT32 - 1) + 1));
    }
    gst_buffer_unmap(fci, &map);
}

int cwebrtc_peer_stats(CWebRTCSession *session, int32_t id, int32_t timeout_ms, CWebRTCPeerStats *stats) {
    (void)timeout_ms;
    memset(stats, 0, sizeof *stats);
    g_mutex_lock(&session->lock);
    Peer *peer = g_hash_table_lookup(session->peers, GINT_TO_POINTER(id));
    GstElement *webrtc = peer ? gst_object_ref(peer->webrtc) : NULL;
    int32_t state = 0;
    if (peer) {
        g_mutex_lock(&peer->lock);
        state = peer->state;
        g_mutex_unlock(&peer->lock);
    }
    g_mutex_unlock(&session->lock);
    if (!webrtc) return -1;
    stats->connected = state == GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED;
    GstElement *rtpbin = gst_bin_get_by_name(GST_BIN(webrtc), "rtpbin");
    if (rtpbin) {
        /* One session with max-bundle; two if the receiver refused bundling. */
        for (guint index = 0; index < 2; index++) {
            GObject *rtp_session = NULL;
            g_signal_emit_by_name(rtpbin, "get-internal-session", index, &rtp_session);
            if (!rtp_session) continue;
            /* Listened to from the first look on (sessions are made during negotiation). */
            if (!g_object_get_data(rtp_session, "cwebrtc-remb-listening")) {
                g_object_set_data(rtp_session, "cwebrtc-remb-listening", GINT_TO_POINTER(1));
                g_signal_connect(rtp_session, "on-feedback-rtcp", G_CALLBACK(on_feedback_rtcp), NULL);
            }
            guint remb = GPOINTER_TO_UINT(g_object_get_data(rtp_session, "cwebrtc-remb-kbps"));
            if (remb > 0) stats->remb_bps = (int64_t)(remb - 1) * 1000;
            GstStructure *all = NULL;
            g_object_get(rtp_session, "stats", &all, NULL);
            const GValue *sources = all ? gst_structure_get_value(all, "source-stats") : NULL;
            if (sources && G_VALUE_HOLDS(sources, G_TYPE_VALUE_ARRAY)) {
                G_GNUC_BEGIN_IGNORE_DEPRECATIONS
                GValueArray *array = g_value_get_boxed(sources);
                GArray *video_ssrcs = g_array_new(FALSE, FALSE, sizeof(guint));
                for (guint i = 0; array && i < array->n_values; i++) {
                    const GValue *value = g_value_array_get_nth(array, i);
                    if (GST_VALUE_HOLDS_STRUCTURE(value)) add_own_source(gst_value_get_structure(value), stats, video_ssrcs);
                }
                for (guint i = 0; array && i < array->n_values; i++) {
                    const GValue *value = g_value_array_get_nth(array, i);
                    if (GST_VALUE_HOLDS_STRUCTURE(value)) add_report(gst_value_get_structure(value), stats, video_ssrcs);
                }
                g_array_free(video_ssrcs, TRUE);
                G_GNUC_END_IGNORE_DEPRECATIONS
            }
            if (all) gst_structure_free(all);
            g_object_unref(rtp_session);
        }
        gst_object_unref(rtpbin);
    }
    gst_object_unref(webrtc);
    return 0;
}
