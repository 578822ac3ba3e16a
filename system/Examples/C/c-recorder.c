/*
 * c-recorder: an X11 app in C that uses libopenreplaykit. It opens a coloured window, keeps a
 * second, secret window black in every capture, follows the capture state, records a replay
 * of its own window and hands the person the preview, streams its own window's pictures
 * (in-app capture), and can share itself through the broadcast picker. Each step prints one
 * JSON line, so scripts and tests can follow it.
 *
 *   cc c-recorder.c $(pkg-config --cflags --libs openreplaykit xcb) -lpthread -o c-recorder
 *   ./c-recorder --record 3                 records 3 s of its window, shows the preview
 *   ./c-recorder --share-frames 30          30 pictures of its own windows, with the colour at each one's centre
 *   ./c-recorder --go-live file --setup dir=/tmp --seconds 5
 *                                           the picker for the `file` extension with its folder filled
 *                                           in, the app's own windows only; finishes after 5 s live
 *   options: --socket PATH (replayd's), --colour RRGGBB
 */
#define _POSIX_C_SOURCE 200809L
#include <openreplaykit.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xcb/xcb.h>

/* ------------------------------------------------------------------ the window (XCB) */

static xcb_connection_t *x;

static xcb_window_t open_window(int left, uint32_t colour, const char *title) {
    int screen_number = 0;
    if (!x) {
        x = xcb_connect(NULL, &screen_number);
        if (xcb_connection_has_error(x)) return 0;
    }
    xcb_screen_iterator_t roots = xcb_setup_roots_iterator(xcb_get_setup(x));
    for (int i = 0; i < screen_number; i++) xcb_screen_next(&roots);
    xcb_window_t window = xcb_generate_id(x);
    uint32_t values[] = {colour};
    xcb_create_window(x, XCB_COPY_FROM_PARENT, window, roots.data->root, (int16_t)left, 0, 320, 240, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, roots.data->root_visual, XCB_CW_BACK_PIXEL, values);
    xcb_change_property(x, XCB_PROP_MODE_REPLACE, window, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8, (uint32_t)strlen(title), title);
    xcb_map_window(x, window);
    /* A round trip: the window is on the screen when this returns. */
    free(xcb_get_input_focus_reply(x, xcb_get_input_focus(x), NULL));
    return window;
}

/* ------------------------------------------------------------------------- reporting */

static pthread_mutex_t output = PTHREAD_MUTEX_INITIALIZER;

static void report(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    pthread_mutex_lock(&output);
    vprintf(format, arguments);
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&output);
    va_end(arguments);
}

/* Reports a failed call and exits: {"event":"error","code":"ORK_ERROR_USER_DECLINED","message":...}. */
static void fail(const char *step, int status, ork_error *error) {
    char message[512];
    snprintf(message, sizeof message, "%s", error ? ork_error_message(error) : "");
    for (char *c = message; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) *c = ' ';
    report("{\"event\":\"error\",\"step\":\"%s\",\"code\":\"%s\",\"message\":\"%s\"}", step, ork_status_name(status), message);
    ork_error_free(error);
    exit(3);
}

#define TRY(step, call)                                                        \
    do {                                                                       \
        ork_error *error = NULL;                                               \
        int status = (call);                                                   \
        if (status != ORK_OK) fail(step, status, error);                       \
    } while (0)

/* --------------------------------------------------------------------- callbacks */

/* On the client's callback thread, one at a time. */
static void on_capture_state(ork_client *client, uint32_t reasons, void *user_data) {
    (void)client;
    (void)user_data;
    report("{\"event\":\"captureState\",\"captured\":%s,\"screenRecording\":%s,\"inAppCapture\":%s,\"broadcast\":%s}",
           reasons ? "true" : "false", reasons & ORK_CAPTURED_SCREEN_RECORDING ? "true" : "false",
           reasons & ORK_CAPTURED_IN_APP_CAPTURE ? "true" : "false", reasons & ORK_CAPTURED_BROADCAST ? "true" : "false");
}

/* The pictures' colour at the centres of the two windows (the window at 0,0, the secret at 340,0;
 * both 320x240), summed over the pictures, as Y, U, V. */
struct share {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int wanted, received;
    double window[3], secret[3];
};

/* Adds the Y, U and V of the picture at x, y (screen coordinates: in-app capture's pictures are
 * the screen, with everything but the app's own windows black). */
static void add_pixel(const ork_frame *frame, int x, int y, double sums[3]) {
    if (x >= frame->width || y >= frame->height) return;
    sums[0] += frame->planes[0][y * frame->strides[0] + x];
    sums[1] += frame->planes[1][(y / 2) * frame->strides[1] + x / 2];
    sums[2] += frame->planes[2][(y / 2) * frame->strides[2] + x / 2];
}

static void on_frame(ork_client *client, const ork_frame *frame, void *user_data) {
    (void)client;
    struct share *share = user_data;
    if (!frame) return; /* the capture ended by itself */
    pthread_mutex_lock(&share->lock);
    if (share->received < share->wanted) {
        share->received++;
        add_pixel(frame, 160, 120, share->window);
        add_pixel(frame, 500, 120, share->secret);
        if (share->received == share->wanted) pthread_cond_signal(&share->done);
    }
    pthread_mutex_unlock(&share->lock);
}

struct live {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int state;
    int over;
};

static void on_broadcast(ork_client *client, const ork_broadcast_status *status, void *user_data) {
    (void)client;
    struct live *live = user_data;
    static const char *names[] = {"starting", "live", "paused", "finished", "failed"};
    const char *name = status->state >= 0 && status->state <= 4 ? names[status->state] : "other";
    /* What the extension tells the app (a call's "janus": joining, published), as a JSON object. */
    char info[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < status->service_info_count && used < sizeof info - 1; i++) {
        char pair[256];
        snprintf(pair, sizeof pair, "%s\"%s\":\"%s\"", i ? "," : "", status->service_info[2 * i], status->service_info[2 * i + 1]);
        for (char *c = pair; *c; c++)
            if (*c == '\\' || (unsigned char)*c < 0x20) *c = ' ';
        used += (size_t)snprintf(info + used, sizeof info - used, "%s", pair);
    }
    report("{\"event\":\"broadcast\",\"state\":\"%s\",\"extension\":\"%s\",\"framesSent\":%lld,\"info\":{%s}}", name,
           status->extension_id, (long long)status->frames_sent, info);
    pthread_mutex_lock(&live->lock);
    live->state = status->state;
    live->over = status->state == ORK_BROADCAST_FINISHED || status->state == ORK_BROADCAST_FAILED;
    pthread_cond_signal(&live->changed);
    pthread_mutex_unlock(&live->lock);
}

/* ----------------------------------------------------------------------- the app */

int main(int argc, char **argv) {
    const char *socket = NULL, *go_live = NULL;
    const char *setup[2 * 8 + 1] = {NULL}; /* key, value, ..., NULL: the extension's settings the app fills in */
    int settings = 0;
    double record = 0, seconds = 5;
    int share_frames = 0;
    uint32_t colour = 0x0000ff;
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--socket") && value) socket = argv[++i];
        else if (!strcmp(argv[i], "--record") && value) record = atof(argv[++i]);
        else if (!strcmp(argv[i], "--share-frames") && value) share_frames = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--go-live") && value) go_live = argv[++i];
        else if (!strcmp(argv[i], "--seconds") && value) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--colour") && value) colour = (uint32_t)strtoul(argv[++i], NULL, 16);
        else if (!strcmp(argv[i], "--setup") && value && strchr(value, '=') && settings < 8) {
            char *pair = argv[++i];
            *strchr(pair, '=') = '\0';
            setup[2 * settings] = pair;
            setup[2 * settings + 1] = pair + strlen(pair) + 1;
            settings++;
        }
        else {
            fprintf(stderr, "usage: c-recorder [--socket PATH] [--colour RRGGBB] [--record SECONDS] [--share-frames N] "
                            "[--go-live EXTENSION [--seconds S] [--setup KEY=VALUE]...]\n");
            return 2;
        }
    }

    xcb_window_t window = open_window(0, colour, "C recorder");
    xcb_window_t secret = open_window(340, 0xff0000, "C recorder: secret");
    if (!window || !secret) {
        report("{\"event\":\"error\",\"step\":\"window\",\"code\":\"\",\"message\":\"cannot open the X display in DISPLAY\"}");
        return 3;
    }
    report("{\"event\":\"window\",\"id\":%u,\"secret\":%u,\"library\":\"%s\"}", window, secret, ork_version());

    ork_client *client = NULL;
    TRY("client", ork_client_new(socket, &client, &error));
    TRY("protect", ork_window_protect(client, secret, &error));
    report("{\"event\":\"protected\",\"id\":%u}", secret);
    TRY("watch", ork_capture_state_watch(client, on_capture_state, NULL, &error));

    if (share_frames > 0) {
        struct share share = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, share_frames, 0, {0, 0, 0}, {0, 0, 0}};
        TRY("capture", ork_capture_start(client, 30, on_frame, &share, &error));
        pthread_mutex_lock(&share.lock);
        while (share.received < share.wanted) pthread_cond_wait(&share.done, &share.lock);
        pthread_mutex_unlock(&share.lock);
        TRY("capture stop", ork_capture_stop(client, &error));
        double n = share.received;
        report("{\"event\":\"shared\",\"frames\":%d,\"window\":[%.1f,%.1f,%.1f],\"secret\":[%.1f,%.1f,%.1f]}", share.received,
               share.window[0] / n, share.window[1] / n, share.window[2] / n, share.secret[0] / n, share.secret[1] / n,
               share.secret[2] / n);
    }
    if (record > 0) {
        TRY("record", ork_recording_start(client, window, 0, &error));
        report("{\"event\":\"recording\"}");
        struct timespec pause = {(time_t)record, (long)((record - (time_t)record) * 1e9)};
        nanosleep(&pause, NULL);
        ork_recording recording;
        TRY("stop", ork_recording_stop(client, &recording, &error));
        report("{\"event\":\"recorded\",\"id\":\"%s\",\"duration\":%.2f,\"frames\":%lld}", recording.id, recording.duration,
               (long long)recording.frames);
        TRY("preview", ork_recording_show_preview(client, recording.id, &error));
        report("{\"event\":\"previewShown\"}");
    }
    if (go_live) {
        struct live live = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, -1, 0};
        TRY("broadcast watch", ork_broadcast_watch(client, on_broadcast, &live, &error));
        TRY("picker", ork_broadcast_picker_show(client, go_live, ORK_BROADCAST_SCOPE_APP, 0, setup, &error));
        report("{\"event\":\"pickerShown\"}");
        pthread_mutex_lock(&live.lock);
        while (live.state != ORK_BROADCAST_LIVE && !live.over) pthread_cond_wait(&live.changed, &live.lock);
        pthread_mutex_unlock(&live.lock);
        if (!live.over) {
            /* A pause and a resume, as a call app's "pause sharing" button. */
            TRY("pause", ork_broadcast_pause(client, &error));
            pthread_mutex_lock(&live.lock);
            while (live.state != ORK_BROADCAST_PAUSED && !live.over) pthread_cond_wait(&live.changed, &live.lock);
            pthread_mutex_unlock(&live.lock);
            TRY("resume", ork_broadcast_resume(client, &error));
            pthread_mutex_lock(&live.lock);
            while (live.state != ORK_BROADCAST_LIVE && !live.over) pthread_cond_wait(&live.changed, &live.lock);
            pthread_mutex_unlock(&live.lock);
            struct timespec pause = {(time_t)seconds, 0};
            nanosleep(&pause, NULL);
            TRY("finish", ork_broadcast_finish(client, &error));
            pthread_mutex_lock(&live.lock);
            while (!live.over) pthread_cond_wait(&live.changed, &live.lock);
            pthread_mutex_unlock(&live.lock);
        }
    }
    ork_client_free(client);
    xcb_disconnect(x);
    report("{\"event\":\"done\"}");
    return 0;
}
