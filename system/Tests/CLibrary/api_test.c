/*
 * libopenreplaykit's C interface on its own: every call, every error it promises, and misuse
 * (NULLs, freed and made-up handles, callbacks that block or call back in, a client freed from
 * its own callback). Built with AddressSanitizer and run against a real replayd by the
 * integration test CLibraryTests; it prints one line per check and exits 1 if any failed.
 *
 *   api_test SOCKET OTHER_WINDOW     everything, with a consent policy that allows this program
 *                                    (OTHER_WINDOW: an X window of another process)
 *   api_test SOCKET --declined       the person says no: every start is ORK_ERROR_USER_DECLINED
 */
#define _GNU_SOURCE /* pthread_getname_np */
#include <openreplaykit.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xcb/xcb.h>

static int failures = 0;

#define CHECK(condition, ...)                                                  \
    do {                                                                       \
        if (condition) {                                                       \
            printf("ok   %s\n", #condition);                                   \
        } else {                                                               \
            failures++;                                                        \
            printf("FAIL %s (line %d): ", #condition, __LINE__);               \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
        fflush(stdout);                                                        \
    } while (0)

/* A status and, through an error object, its message; frees the object. */
static int expect(int status, int wanted, ork_error *error, const char *what) {
    int ok = status == wanted && (wanted == ORK_OK ? error == NULL : error != NULL && ork_error_status(error) == wanted);
    if (ok) {
        printf("ok   %s: %s%s%s\n", what, ork_status_name(status), error ? ": " : "", error ? ork_error_message(error) : "");
    } else {
        failures++;
        printf("FAIL %s: wanted %s, got %s (%s)\n", what, ork_status_name(wanted), ork_status_name(status),
               error ? ork_error_message(error) : "no error object");
    }
    fflush(stdout);
    ork_error_free(error);
    return ok;
}

#define EXPECT(wanted, call_with_error, what)                                  \
    do {                                                                       \
        ork_error *error = NULL;                                               \
        int status = (call_with_error);                                        \
        expect(status, (wanted), error, (what));                               \
    } while (0)

/* ------------------------------------------------------------- waiting for callbacks */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

/* Waits (at most `seconds`) until `predicate` holds; the predicate runs with `lock` held. */
static int wait_until(int (*predicate)(void), double seconds) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += (time_t)seconds;
    pthread_mutex_lock(&lock);
    int result;
    while (!(result = predicate())) {
        if (pthread_cond_timedwait(&changed, &lock, &deadline) == ETIMEDOUT) {
            result = predicate();
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return result;
}

static void signal_change(void) {
    pthread_cond_broadcast(&changed);
}

/* Capture state: every value the callback saw, in order. */
static uint32_t states[64];
static int state_count = 0;
static pthread_t callback_thread;
static int callback_thread_known = 0;
static int callbacks_on_two_threads = 0;
static char callback_thread_name[16] = "";

static void note_thread(void) {
    if (!callback_thread_known) {
        callback_thread = pthread_self();
        callback_thread_known = 1;
        pthread_getname_np(callback_thread, callback_thread_name, sizeof callback_thread_name);
    } else if (!pthread_equal(callback_thread, pthread_self())) {
        callbacks_on_two_threads = 1;
    }
}

static void on_state(ork_client *client, uint32_t reasons, void *user_data) {
    (void)client;
    pthread_mutex_lock(&lock);
    note_thread();
    if (user_data != (void *)&states) callbacks_on_two_threads = 2;
    if (state_count < 64) states[state_count++] = reasons;
    signal_change();
    pthread_mutex_unlock(&lock);
}

static int last_state_is_recording(void) { return state_count > 0 && (states[state_count - 1] & ORK_CAPTURED_SCREEN_RECORDING); }
static int last_state_is_clear(void) { return state_count > 0 && states[state_count - 1] == 0; }

/* In-app capture. */
static atomic_int frames = 0;
static atomic_int bad_frames = 0;
static atomic_int frames_after_stop = 0;
static atomic_int capture_stopped = 0;
static atomic_int block_next_frame = 0;
static atomic_int blocked = 0;
static atomic_int release_block = 0;
static atomic_int reentrant_status = -1;
static int64_t last_time = 0;
static atomic_int centre_u = -1;
static uint64_t luma_sum = 0;

static void on_frame(ork_client *client, const ork_frame *frame, void *user_data) {
    (void)user_data;
    /* No call at all once ork_capture_stop() returned: no picture, and no NULL ("ended by itself"). */
    if (atomic_load(&capture_stopped)) atomic_fetch_add(&frames_after_stop, 1);
    if (frame == NULL) return;
    int good = frame->format == ORK_PIXEL_FORMAT_I420 && frame->plane_count == 3 && frame->width > 0 && frame->height > 0 &&
               frame->width % 2 == 0 && frame->height % 2 == 0 && frame->strides[0] >= frame->width &&
               frame->strides[1] >= frame->width / 2 && frame->strides[2] >= frame->width / 2 &&
               frame->plane_heights[0] == frame->height && frame->plane_heights[1] == frame->height / 2 &&
               frame->planes[0] && frame->planes[1] && frame->planes[2] && frame->time_ns > last_time;
    if (good) {
        /* Every byte of every plane, so a plane that lies gets read past its end. */
        for (int p = 0; p < 3; p++)
            for (int row = 0; row < frame->plane_heights[p]; row++)
                for (int x = 0; x < (p == 0 ? frame->width : frame->width / 2); x++)
                    luma_sum += frame->planes[p][row * frame->strides[p] + x];
    } else {
        atomic_fetch_add(&bad_frames, 1);
    }
    last_time = frame->time_ns;
    /* The centre of this program's window (0,0, 320x240): blue, or black while protected. */
    if (good && frame->width > 160 && frame->height > 120) atomic_store(&centre_u, frame->planes[1][60 * frame->strides[1] + 80]);
    /* Calling back into the library from a callback works. */
    uint32_t reasons = 0;
    atomic_store(&reentrant_status, ork_capture_state_get(client, &reasons, NULL));
    pthread_mutex_lock(&lock);
    note_thread();
    atomic_fetch_add(&frames, 1);
    signal_change();
    pthread_mutex_unlock(&lock);
    if (atomic_exchange(&block_next_frame, 0)) {
        /* A callback that blocks until the test lets it go. */
        pthread_mutex_lock(&lock);
        atomic_store(&blocked, 1);
        signal_change();
        while (!atomic_load(&release_block)) pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
    }
}

static int five_frames(void) { return atomic_load(&frames) >= 5; }
static int centre_is_blue(void) { return atomic_load(&centre_u) > 200; }
static int frames_at_release = 0;
static int more_frames(void) { return atomic_load(&frames) > frames_at_release; }
static int is_blocked(void) { return atomic_load(&blocked); }

/* A client freed from its own callback. */
static atomic_int freed_in_callback = 0;
static void free_myself(ork_client *client, uint32_t reasons, void *user_data) {
    (void)reasons;
    (void)user_data;
    ork_client_free(client);
    pthread_mutex_lock(&lock);
    atomic_store(&freed_in_callback, 1);
    signal_change();
    pthread_mutex_unlock(&lock);
}
static int was_freed(void) { return atomic_load(&freed_in_callback); }

static void on_broadcast(ork_client *client, const ork_broadcast_status *status, void *user_data) {
    (void)client;
    (void)status;
    (void)user_data;
}

/* ------------------------------------------------------------------------- the checks */

static void misuse(void) {
    puts("# misuse: NULLs, made-up and freed handles");
    CHECK(strcmp(ork_status_name(ORK_OK), "ORK_OK") == 0, "%s", ork_status_name(ORK_OK));
    CHECK(strcmp(ork_status_name(ORK_ERROR_USER_DECLINED), "ORK_ERROR_USER_DECLINED") == 0, "%s",
          ork_status_name(ORK_ERROR_USER_DECLINED));
    CHECK(strcmp(ork_status_name(999), "ORK_STATUS_UNKNOWN") == 0, "%s", ork_status_name(999));
    CHECK(strcmp(ork_status_name(-1), "ORK_STATUS_UNKNOWN") == 0, "%s", ork_status_name(-1));
    const char *version = ork_version();
    int major, minor, patch;
    CHECK(version && sscanf(version, "%d.%d.%d", &major, &minor, &patch) == 3, "version '%s'", version ? version : "(null)");

    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_client_new(NULL, NULL, &error), "ork_client_new without an out-parameter");

    /* Every call with NULL, with a pointer the library never gave out, and without an error object. */
    int local = 0;
    ork_client *madeup = (ork_client *)&local;
    ork_client *handles[] = {NULL, madeup};
    for (int i = 0; i < 2; i++) {
        ork_client *c = handles[i];
        uint32_t reasons = 7;
        uint64_t dropped = 0;
        ork_recording recording;
        const char *setup[] = {"room", "1", NULL};
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_capture_state_get(c, &reasons, &error), "capture_state_get, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_capture_state_watch(c, on_state, NULL, &error), "capture_state_watch, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_window_protect(c, 1, &error), "window_protect, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_window_unprotect(c, 1, &error), "window_unprotect, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_recording_start(c, 0, 0, &error), "recording_start, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_recording_stop(c, &recording, &error), "recording_stop, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_recording_show_preview(c, "rec-1", &error), "show_preview, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_recording_discard(c, "rec-1", &error), "discard, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_capture_start(c, 30, on_frame, NULL, &error), "capture_start, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_capture_stop(c, &error), "capture_stop, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_capture_dropped_frames(c, &dropped, &error), "dropped_frames, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_clip_buffering_start(c, 30, &error), "clip_buffering_start, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_clip_export(c, "/tmp/x.mp4", 1, &error), "clip_export, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_clip_buffering_stop(c, &error), "clip_buffering_stop, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_broadcast_picker_show(c, NULL, ORK_BROADCAST_SCOPE_SCREEN, 0, setup, &error),
               "picker_show, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_broadcast_watch(c, on_broadcast, NULL, &error), "broadcast_watch, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_broadcast_pause(c, &error), "broadcast_pause, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_broadcast_resume(c, &error), "broadcast_resume, bad client");
        EXPECT(ORK_ERROR_INVALID_HANDLE, ork_broadcast_finish(c, &error), "broadcast_finish, bad client");
        CHECK(ork_recording_start(c, 0, 0, NULL) == ORK_ERROR_INVALID_HANDLE, "without an error object");
        CHECK(local == 0, "the library wrote through a made-up handle");
        ork_client_free(c); /* nothing happens */
    }

    /* An error already there is kept (GError's rule), the new status is still returned. */
    ork_error *first = NULL;
    CHECK(ork_capture_stop(NULL, &first) == ORK_ERROR_INVALID_HANDLE, "first error");
    ork_error *kept = first;
    CHECK(ork_client_new(NULL, NULL, &first) == ORK_ERROR_INVALID_ARGUMENT && first == kept &&
              ork_error_status(first) == ORK_ERROR_INVALID_HANDLE,
          "the first error object was replaced");
    CHECK(strstr(ork_error_message(first), "NULL") != NULL, "message: %s", ork_error_message(first));
    ork_error_free(first);
    /* A freed error object, and NULL: detected, never read. */
    CHECK(ork_error_status(first) == ORK_ERROR_INVALID_HANDLE, "status of a freed error");
    CHECK(strlen(ork_error_message(first)) > 0, "message of a freed error");
    CHECK(ork_error_status(NULL) == ORK_ERROR_INVALID_HANDLE, "status of NULL");
    ork_error_free(first);
    ork_error_free(NULL);

    /* A freed client: every call says so, forever. */
    ork_client *client = NULL;
    EXPECT(ORK_OK, ork_client_new("/nonexistent/replayd.sock", &client, &error), "ork_client_new");
    CHECK(client != NULL, "no client");
    ork_client_free(client);
    uint32_t reasons;
    EXPECT(ORK_ERROR_INVALID_HANDLE, ork_capture_state_get(client, &reasons, &error), "a freed client");
    EXPECT(ORK_ERROR_INVALID_HANDLE, ork_recording_start(client, 0, 0, &error), "a freed client");
    ork_client_free(client); /* twice: nothing happens */
    ork_client *next = NULL;
    CHECK(ork_client_new(NULL, &next, NULL) == ORK_OK && next != client, "a new client reuses a freed handle");
    ork_client_free(next);
}

static void no_daemon(void) {
    puts("# no daemon");
    ork_client *client = NULL;
    EXPECT(ORK_OK, ork_client_new("/nonexistent/replayd.sock", &client, &error), "a client needs no daemon");
    uint32_t reasons = 7;
    EXPECT(ORK_OK, ork_capture_state_get(client, &reasons, &error), "capture state without a daemon");
    CHECK(reasons == 0, "reasons %u", reasons);
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_capture_state_get(client, NULL, &error), "capture state, reasons NULL");
    EXPECT(ORK_ERROR_NO_DAEMON, ork_capture_state_watch(client, on_state, NULL, &error), "watch without a daemon");
    EXPECT(ORK_ERROR_NO_DAEMON, ork_recording_start(client, 0, 0, &error), "record without a daemon");
    EXPECT(ORK_ERROR_NO_DAEMON, ork_capture_start(client, 30, on_frame, NULL, &error), "capture without a daemon");
    EXPECT(ORK_ERROR_NO_DAEMON, ork_window_protect(client, 1, &error), "protect without a daemon");
    EXPECT(ORK_ERROR_NO_DAEMON, ork_clip_buffering_start(client, 30, &error), "clip buffer without a daemon");
    EXPECT(ORK_ERROR_NO_DAEMON, ork_broadcast_picker_show(client, NULL, ORK_BROADCAST_SCOPE_SCREEN, 0, NULL, &error),
           "picker without a daemon");
    ork_client_free(client);
}

/* An X window of this process, mapped, so replayd sees who made it. */
static uint32_t make_window(xcb_connection_t **connection) {
    int screen_number = 0;
    *connection = xcb_connect(NULL, &screen_number);
    if (xcb_connection_has_error(*connection)) return 0;
    xcb_screen_iterator_t roots = xcb_setup_roots_iterator(xcb_get_setup(*connection));
    for (int i = 0; i < screen_number; i++) xcb_screen_next(&roots);
    xcb_window_t window = xcb_generate_id(*connection);
    uint32_t values[] = {0x0000ff};
    xcb_create_window(*connection, XCB_COPY_FROM_PARENT, window, roots.data->root, 0, 0, 320, 240, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, roots.data->root_visual, XCB_CW_BACK_PIXEL, values);
    xcb_map_window(*connection, window);
    free(xcb_get_input_focus_reply(*connection, xcb_get_input_focus(*connection), NULL));
    return window;
}

static void with_daemon(const char *socket, uint32_t other_window) {
    xcb_connection_t *x = NULL;
    uint32_t window = make_window(&x);
    CHECK(window != 0, "no X window (DISPLAY?)");

    ork_client *client = NULL;
    EXPECT(ORK_OK, ork_client_new(socket, &client, &error), "client");

    puts("# capture state");
    EXPECT(ORK_OK, ork_capture_state_watch(client, on_state, &states, &error), "watch");
    CHECK(wait_until(last_state_is_clear, 20), "the first state (0) never came");
    uint32_t reasons = 7;
    EXPECT(ORK_OK, ork_capture_state_get(client, &reasons, &error), "get");
    CHECK(reasons == 0, "reasons %u", reasons);

    puts("# protected windows");
    EXPECT(ORK_OK, ork_window_protect(client, window, &error), "protect its own window");
    EXPECT(ORK_OK, ork_window_unprotect(client, window, &error), "unprotect");
    EXPECT(ORK_OK, ork_window_protect(client, window, &error), "protect again");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_window_protect(client, 0, &error), "window 0");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_window_unprotect(client, 0, &error), "unprotect window 0");
    EXPECT(ORK_ERROR_NOT_PERMITTED, ork_window_protect(client, other_window, &error), "another process's window");
    EXPECT(ORK_ERROR_FAILED_TO_START, ork_window_protect(client, 0x7ffffff0, &error), "no such window");

    puts("# recording");
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_recording_stop(client, NULL, &error), "stop before start");
    EXPECT(ORK_OK, ork_recording_start(client, 0, 0, &error), "start");
    CHECK(wait_until(last_state_is_recording, 20), "the capture state never said screenRecording");
    EXPECT(ORK_ERROR_ALREADY_RUNNING, ork_recording_start(client, 0, 0, &error), "start twice");
    ork_recording recording;
    memset(&recording, 0xff, sizeof recording);
    EXPECT(ORK_OK, ork_recording_stop(client, &recording, &error), "stop");
    CHECK(memchr(recording.id, 0, sizeof recording.id) != NULL && strlen(recording.id) > 0, "id");
    CHECK(recording.duration >= 0 && recording.duration < 60, "duration %f", recording.duration);
    CHECK(recording.frames >= 0 && recording.frames < 3600, "frames %lld", (long long)recording.frames);
    printf("     recorded %.*s, %.2f s, %lld frames\n", (int)sizeof recording.id, recording.id, recording.duration,
           (long long)recording.frames);
    CHECK(wait_until(last_state_is_clear, 20), "the capture state never went back to 0");
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_recording_stop(client, &recording, &error), "stop twice");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_recording_show_preview(client, NULL, &error), "preview of NULL");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_recording_discard(client, "", &error), "discard of \"\"");
    /* Stopped before its first picture, a recording is not kept, and its preview says so; until
     * one holds a picture, record again (each a round through replayd and a capture process). */
    for (int attempt = 0; recording.frames == 0 && attempt < 10; attempt++) {
        EXPECT(ORK_ERROR_FAILED_TO_SHOW_PREVIEW, ork_recording_show_preview(client, recording.id, &error),
               "preview of a recording with no picture");
        EXPECT(ORK_OK, ork_recording_start(client, 0, 0, &error), "start again");
        CHECK(wait_until(last_state_is_recording, 20), "the capture state never said screenRecording");
        EXPECT(ORK_OK, ork_recording_stop(client, &recording, &error), "stop again");
        CHECK(wait_until(last_state_is_clear, 20), "the capture state never went back to 0");
        printf("     recorded %.*s, %lld frames\n", (int)sizeof recording.id, recording.id, (long long)recording.frames);
    }
    CHECK(recording.frames > 0, "10 recordings without a picture");
    EXPECT(ORK_OK, ork_recording_show_preview(client, recording.id, &error), "preview (to the consent agent)");
    EXPECT(ORK_ERROR_NOT_PERMITTED, ork_recording_show_preview(client, "rec-nonexistent", &error), "preview of no recording of its own");
    EXPECT(ORK_OK, ork_recording_discard(client, recording.id, &error), "discard");
    EXPECT(ORK_ERROR_NOT_PERMITTED, ork_recording_discard(client, recording.id, &error), "discard twice");
    EXPECT(ORK_OK, ork_recording_start(client, window, 0, &error), "start, own window only");
    EXPECT(ORK_OK, ork_recording_stop(client, NULL, &error), "stop without an out-parameter");

    puts("# in-app capture");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_capture_start(client, 0, on_frame, NULL, &error), "fps 0");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_capture_start(client, 61, on_frame, NULL, &error), "fps 61");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_capture_start(client, 30, NULL, NULL, &error), "no callback");
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_capture_stop(client, &error), "stop before start");
    EXPECT(ORK_OK, ork_capture_start(client, 30, on_frame, NULL, &error), "start");
    CHECK(wait_until(five_frames, 30), "5 frames never came (%d)", atomic_load(&frames));
    CHECK(atomic_load(&bad_frames) == 0, "%d frames with wrong sizes, strides or times", atomic_load(&bad_frames));
    CHECK(atomic_load(&reentrant_status) == ORK_OK, "a call from the frame callback: %d", atomic_load(&reentrant_status));
    /* The window is protected (above): black (U 128) in its own app's pictures too. */
    CHECK(abs(atomic_load(&centre_u) - 128) < 8, "the protected window's centre has U %d", atomic_load(&centre_u));
    EXPECT(ORK_ERROR_ALREADY_RUNNING, ork_capture_start(client, 30, on_frame, NULL, &error), "start twice");

    puts("# a callback that blocks");
    uint64_t dropped_before = 0, dropped = 0;
    EXPECT(ORK_OK, ork_capture_dropped_frames(client, &dropped_before, &error), "dropped frames");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_capture_dropped_frames(client, NULL, &error), "dropped frames into NULL");
    atomic_store(&block_next_frame, 1);
    CHECK(wait_until(is_blocked, 20), "the frame callback never blocked");
    /* While it blocks, the library answers: calls on this client, and a whole recording. */
    EXPECT(ORK_OK, ork_capture_state_get(client, &reasons, &error), "get while a callback blocks");
    EXPECT(ORK_OK, ork_recording_start(client, 0, 0, &error), "record while a callback blocks");
    EXPECT(ORK_OK, ork_recording_stop(client, NULL, &error), "stop while a callback blocks");
    /* Frames keep coming: the newest waits, the others are dropped. */
    struct timespec deadline, now;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 20;
    do {
        ork_capture_dropped_frames(client, &dropped, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (dropped < dropped_before + 3 && now.tv_sec < deadline.tv_sec);
    CHECK(dropped >= dropped_before + 3, "dropped %llu, before %llu", (unsigned long long)dropped,
          (unsigned long long)dropped_before);
    pthread_mutex_lock(&lock);
    frames_at_release = atomic_load(&frames);
    atomic_store(&release_block, 1);
    signal_change();
    pthread_mutex_unlock(&lock);
    CHECK(wait_until(more_frames, 20), "no frame came after the callback returned");

    EXPECT(ORK_OK, ork_capture_stop(client, &error), "stop");
    atomic_store(&capture_stopped, 1);
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_capture_stop(client, &error), "stop twice");
    CHECK(luma_sum > 0, "the pictures were all zero");

    puts("# clip buffer");
    const char *clip = "/tmp/ork-api-test-clip.mp4";
    remove(clip);
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_clip_export(client, clip, 1, &error), "export before start");
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_clip_buffering_stop(client, &error), "stop before start");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_clip_buffering_start(client, 0.5, &error), "0.5 s");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_clip_buffering_start(client, 4000, &error), "4000 s");
    EXPECT(ORK_OK, ork_clip_buffering_start(client, 30, &error), "start");
    EXPECT(ORK_ERROR_ALREADY_RUNNING, ork_clip_buffering_start(client, 30, &error), "start twice");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_clip_export(client, NULL, 1, &error), "export to NULL");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_clip_export(client, clip, 0, &error), "export 0 s");
    /* Until the buffer holds a keyframe, replayd says there is nothing to save yet. */
    int exported = 0;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 30;
    do {
        ork_error *error = NULL;
        int status = ork_clip_export(client, clip, 2, &error);
        if (status == ORK_OK) exported = 1;
        else if (status != ORK_ERROR_FAILED_TO_SAVE_CLIP) expect(status, ORK_OK, error, "export");
        else ork_error_free(error);
        if (status != ORK_ERROR_FAILED_TO_SAVE_CLIP) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec < deadline.tv_sec);
    CHECK(exported, "no clip was exported in 30 s");
    FILE *file = fopen(clip, "rb");
    char head[12] = {0};
    CHECK(file && fread(head, 1, 12, file) == 12 && memcmp(head + 4, "ftyp", 4) == 0, "the clip is no MP4 file");
    if (file) fclose(file);
    remove(clip);
    EXPECT(ORK_OK, ork_clip_buffering_stop(client, &error), "stop");
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_clip_buffering_stop(client, &error), "stop twice");

    puts("# broadcast picker");
    const char *odd[] = {"room", NULL};
    const char *setup[] = {"dir", "/tmp", NULL};
    const char *unknown[] = {"room", "1234", NULL};
    EXPECT(ORK_OK, ork_broadcast_watch(client, on_broadcast, NULL, &error), "watch");
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_broadcast_pause(client, &error), "pause with no broadcast");
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_broadcast_resume(client, &error), "resume with no broadcast");
    EXPECT(ORK_ERROR_NOT_RUNNING, ork_broadcast_finish(client, &error), "finish with no broadcast");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_broadcast_picker_show(client, NULL, 7, 0, NULL, &error), "scope 7");
    EXPECT(ORK_ERROR_INVALID_ARGUMENT, ork_broadcast_picker_show(client, NULL, ORK_BROADCAST_SCOPE_APP, 0, odd, &error),
           "a key without a value");
    EXPECT(ORK_ERROR_FAILED_TO_SHOW_PREVIEW, ork_broadcast_picker_show(client, "nonexistent", ORK_BROADCAST_SCOPE_APP, 0, NULL, &error),
           "an extension that is not installed");
    EXPECT(ORK_ERROR_FAILED_TO_SHOW_PREVIEW, ork_broadcast_picker_show(client, "file", ORK_BROADCAST_SCOPE_APP, 0, unknown, &error),
           "a setting the extension does not have");
    EXPECT(ORK_OK, ork_broadcast_picker_show(client, "file", ORK_BROADCAST_SCOPE_APP, 0, setup, &error), "show (to the consent agent)");
    EXPECT(ORK_OK, ork_broadcast_watch(client, NULL, NULL, &error), "stop watching");

    puts("# callbacks: one thread");
    EXPECT(ORK_OK, ork_capture_state_watch(client, NULL, NULL, &error), "stop watching the state");
    pthread_mutex_lock(&lock);
    int seen = state_count;
    CHECK(callbacks_on_two_threads == 0, "callbacks ran on two threads (%d)", callbacks_on_two_threads);
    CHECK(!pthread_equal(callback_thread, pthread_self()), "a callback ran on the caller's thread");
    CHECK(strcmp(callback_thread_name, "ork-callbacks") == 0, "the callback thread is named '%s'", callback_thread_name);
    pthread_mutex_unlock(&lock);

    puts("# free with a capture running, and from a callback");
    CHECK(atomic_load(&frames_after_stop) == 0, "%d frame callbacks after ork_capture_stop returned", atomic_load(&frames_after_stop));
    atomic_store(&capture_stopped, 0);
    EXPECT(ORK_OK, ork_capture_start(client, 30, on_frame, NULL, &error), "start a capture to leave running");
    ork_client_free(client);
    atomic_store(&capture_stopped, 1); /* no callback after ork_client_free either */
    CHECK(seen == state_count, "a state callback after its watch was stopped");
    ork_client *self_freeing = NULL;
    EXPECT(ORK_OK, ork_client_new(socket, &self_freeing, &error), "another client");
    EXPECT(ORK_OK, ork_capture_state_watch(self_freeing, free_myself, NULL, &error), "a callback that frees its client");
    CHECK(wait_until(was_freed, 20), "the callback never freed its client");
    EXPECT(ORK_ERROR_INVALID_HANDLE, ork_capture_state_get(self_freeing, &reasons, &error), "the client freed in a callback");

    /* A new client can capture at once: the freed one's capture has ended in replayd; and its
     * protection went with it: the window is blue in the pictures now. */
    EXPECT(ORK_OK, ork_client_new(socket, &client, &error), "a third client");
    CHECK(atomic_load(&frames_after_stop) == 0, "%d frame callbacks after ork_client_free returned", atomic_load(&frames_after_stop));
    atomic_store(&capture_stopped, 0);
    EXPECT(ORK_OK, ork_capture_start(client, 30, on_frame, NULL, &error), "capture again");
    CHECK(wait_until(centre_is_blue, 20), "the freed client's protection stayed: U %d", atomic_load(&centre_u));
    EXPECT(ORK_OK, ork_capture_stop(client, &error), "stop");
    ork_client_free(client);
    xcb_disconnect(x);
}

static void declined(const char *socket) {
    puts("# the person says no");
    ork_client *client = NULL;
    EXPECT(ORK_OK, ork_client_new(socket, &client, &error), "client");
    EXPECT(ORK_ERROR_USER_DECLINED, ork_recording_start(client, 0, 0, &error), "record");
    EXPECT(ORK_ERROR_USER_DECLINED, ork_capture_start(client, 30, on_frame, NULL, &error), "capture");
    EXPECT(ORK_ERROR_USER_DECLINED, ork_clip_buffering_start(client, 30, &error), "clip buffer");
    ork_client_free(client);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: api_test SOCKET OTHER_WINDOW | api_test SOCKET --declined\n");
        return 2;
    }
    misuse();
    if (strcmp(argv[2], "--declined") == 0) {
        declined(argv[1]);
    } else {
        no_daemon();
        with_daemon(argv[1], (uint32_t)strtoul(argv[2], NULL, 0));
    }
    printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
