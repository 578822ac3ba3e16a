/*
 * openreplaykit.h: libopenreplaykit, OpenReplayKit's app SDK for C and every language with a
 * C FFI (C++, Python's ctypes, Rust, ...). Link with `pkg-config --cflags --libs openreplaykit`.
 *
 * What an app can do through it, as with ReplayKit: know when the screen is captured and hide
 * what is secret (capture state and its changes), keep windows black in every capture
 * (protected windows), record the screen after the person's consent into replayd's store and
 * hand the person the preview, stream its own windows' pictures (in-app capture), keep the
 * last seconds of its own windows and export them (the clip buffer), and show the person the
 * broadcast picker with the call's settings filled in. Capture happens in the daemon, replayd;
 * this library only talks to it over its socket, and never reads the screen itself.
 *
 * Conventions, for every call:
 *
 *   Status.  Every call that can fail returns an `ork_status`: ORK_OK (0), or an error code.
 *   Codes 1-9 are misuse of this interface (a NULL, a freed handle, a value out of range);
 *   10 and up say why replayd or the person did not do what was asked. Codes never change
 *   meaning; later releases may add codes, so keep a default branch.
 *
 *   Errors.  Every such call takes `ork_error **error` last. Pass NULL to get the code only;
 *   pass the address of an `ork_error *` set to NULL to also get an error object with a
 *   message a person can act on (it is set only on failure, and only when still NULL, as
 *   GLib's GError). The caller owns the object: read it with ork_error_status() and
 *   ork_error_message(), free it with ork_error_free().
 *
 *   Handles.  `ork_client *` and `ork_error *` are tokens, not memory: the library never
 *   dereferences them and never gives the same one out twice. So a call with NULL, with a
 *   handle already freed, or with a pointer the library never gave out returns
 *   ORK_ERROR_INVALID_HANDLE and does nothing else (never a crash, never another object).
 *   Freeing one twice, or NULL, does nothing. Do not dereference them.
 *
 *   Threads.  Every call may be made from any thread, including at the same time from several
 *   (a client's calls are serialised where they must be). Calls that talk to replayd block
 *   the calling thread until replayd answers; ork_recording_start() and friends wait through
 *   the person's consent, which may take a while: call them from a worker thread in a GUI.
 *
 *   Callbacks.  Each client has one thread of the library's own, "the client's callback
 *   thread" (named "ork-callbacks" in debuggers and /proc), that calls every callback
 *   registered on that client: one at a time, never
 *   concurrently, in the order things happened; never from inside a call of yours. A callback
 *   may call any function of this library (including ork_client_free() on its own client)
 *   and may block: while it runs, capture-state and broadcast changes wait in order, and of
 *   the in-app capture's pictures only the newest waits (the ones in between are dropped);
 *   nothing else in the library waits for it, except the calls that promise no further
 *   callback (ork_capture_state_watch(..., NULL, ...), ork_capture_stop(),
 *   ork_broadcast_watch(..., NULL, ...), ork_client_free()), which wait for a callback of
 *   theirs that is running to return, unless called from that callback. So a callback that
 *   blocks forever holds those calls, and only those.
 *
 *   Strings.  In: UTF-8, NUL-terminated, read during the call only. Out: `const char *` the
 *   library keeps (static, or owned by the object named), never freed by the caller.
 */
#ifndef OPENREPLAYKIT_H
#define OPENREPLAYKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The C interface's major version: the soname is libopenreplaykit.so.ORK_API_VERSION. */
#define ORK_API_VERSION 1

typedef struct ork_client ork_client;
typedef struct ork_error ork_error;

/* ----------------------------------------------------------------------------- status */

typedef enum ork_status {
    ORK_OK = 0,
    /* Misuse of the interface. */
    ORK_ERROR_INVALID_ARGUMENT = 1,        /* a NULL where a value is needed, a value out of range */
    ORK_ERROR_INVALID_HANDLE = 2,          /* NULL, freed, or not a handle of this library */
    /* From replayd, the person, or the system (OpenReplayKit's RecordingError codes). */
    ORK_ERROR_UNKNOWN = 10,
    ORK_ERROR_USER_DECLINED = 11,          /* the person (or the consent policy) said no, or nobody was there to ask */
    ORK_ERROR_FAILED_TO_START = 12,
    ORK_ERROR_INTERRUPTED = 13,            /* replayd, the display or the connection went away */
    ORK_ERROR_CONTENT_RESIZE = 14,         /* the screen changed size; what was recorded before is kept */
    ORK_ERROR_INSUFFICIENT_STORAGE = 15,
    ORK_ERROR_ALREADY_RUNNING = 16,        /* a recording, capture or clip buffer of this client already runs */
    ORK_ERROR_NOT_RUNNING = 17,            /* stopping (or exporting from) what does not run */
    ORK_ERROR_FAILED_TO_SHOW_PREVIEW = 18, /* also: the picker could not be shown */
    ORK_ERROR_FAILED_TO_DISCARD_RECORDING = 19,
    ORK_ERROR_FAILED_TO_SAVE_CLIP = 20,
    ORK_ERROR_NO_DAEMON = 21,              /* replayd is not running or cannot be used */
    ORK_ERROR_NOT_PERMITTED = 22,          /* e.g. protecting another process's window */
    ORK_ERROR_QUOTA_EXCEEDED = 23,         /* a limit on what one app may hold at once */
    ORK_ERROR_CANCELLED = 24,
    ORK_ERROR_UNSUPPORTED = 25             /* the running replayd is older and does not know the request */
} ork_status;

/* The enumerator's name ("ORK_ERROR_USER_DECLINED"), static; "ORK_STATUS_UNKNOWN" for a
 * number that is no status. */
const char *ork_status_name(int status);

/* The status of a failed call. ORK_ERROR_INVALID_HANDLE for NULL or a freed error. */
int ork_error_status(const ork_error *error);

/* Why, in words (English, for a person or a log). Owned by the error: valid until
 * ork_error_free(). For NULL or a freed error, a static text saying so. */
const char *ork_error_message(const ork_error *error);

/* Frees an error object. NULL, or an error freed already: nothing happens. */
void ork_error_free(ork_error *error);

/* ---------------------------------------------------------------------------- version */

/* OpenReplayKit's release version ("0.25.0"), static. Never fails. */
const char *ork_version(void);

/* ----------------------------------------------------------------------------- client */

/* Makes a client: the app's connection to replayd, made on first use (this call does not
 * connect, so it succeeds without a daemon; the first call that needs one says
 * ORK_ERROR_NO_DAEMON).
 *   socket  replayd's socket, or NULL to find it as the `replay` CLI does
 *           ($OPENREPLAYKIT_SOCKET, the person's own daemon, then the system daemon).
 *   client  receives the new client (set on success only). The caller owns it.
 * Errors: ORK_ERROR_INVALID_ARGUMENT (client is NULL). */
int ork_client_new(const char *socket, ork_client **client, ork_error **error);

/* Frees a client: stops what it runs (a recording is stopped and kept in the store, as when
 * the app quits; in-app capture and clip buffering end; a broadcast of the app's own windows
 * ends), hangs up its connections and ends its callback thread. When it returns, no callback
 * of this client runs or will run, so their user_data may be freed; a callback running on
 * another thread is waited for. Called from one of this client's own callbacks, it returns
 * at once and the thread ends after that callback. NULL or a freed client: nothing happens. */
void ork_client_free(ork_client *client);

/* ---------------------------------------------------------------------- capture state */

/* Why the screen counts as captured: a bit set. 0 means nothing captures it. */
#define ORK_CAPTURED_SCREEN_RECORDING (1u << 0) /* the screen is being recorded */
#define ORK_CAPTURED_BROADCAST (1u << 1)        /* the screen goes out live */
#define ORK_CAPTURED_MIRRORING (1u << 2)        /* a second screen mirrors this one */
#define ORK_CAPTURED_IN_APP_CAPTURE (1u << 3)   /* another app streams its own windows */
#define ORK_CAPTURED_OTHER (1u << 31)           /* a reason newer than this library */

/* Whether the screen is captured now (ReplayKit's isCaptured), as reason bits in *reasons.
 * Watches from the first call on; the first call waits up to 2 s for replayd's first
 * answer. Without a daemon, *reasons is 0 and the status ORK_OK: nothing captures through
 * replayd then.
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_INVALID_ARGUMENT (reasons is NULL). */
int ork_capture_state_get(ork_client *client, uint32_t *reasons, ork_error **error);

/* Called on the client's callback thread with the state when watching starts, then once per
 * change, in order. When replayd goes away it is called with 0 (if the last call was not 0)
 * and watching ends. */
typedef void (*ork_capture_state_callback)(ork_client *client, uint32_t reasons, void *user_data);

/* Starts calling `callback` with `user_data` for every change of the capture state, in place
 * of any callback set before; a NULL callback stops it (and waits for one running to return,
 * unless called from it: no call of the old callback follows).
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_NO_DAEMON. */
int ork_capture_state_watch(ork_client *client, ork_capture_state_callback callback, void *user_data,
                            ork_error **error);

/* ------------------------------------------------------------------ protected windows */

/* Keeps `window` (an X window id of this process) black in every capture, recording and
 * broadcast, for as long as this client lives or until ork_window_unprotect().
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_INVALID_ARGUMENT (window 0), ORK_ERROR_NO_DAEMON,
 * ORK_ERROR_NOT_PERMITTED (another process's window), ORK_ERROR_FAILED_TO_START (no such window
 * on the display), ORK_ERROR_INTERRUPTED. */
int ork_window_protect(ork_client *client, uint32_t window, ork_error **error);
int ork_window_unprotect(ork_client *client, uint32_t window, ork_error **error);

/* ------------------------------------------------------------------------- recording */

/* Starts recording the screen with its audio into replayd's store (ReplayKit's
 * startRecording). The first time, and again after 8 minutes unused, the person is asked;
 * this call blocks until they answer.
 *   window      0 for the whole screen, or one of this app's X windows (another app's records black)
 *   microphone  nonzero to record the microphone too (asked for in the consent prompt)
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_USER_DECLINED, ORK_ERROR_ALREADY_RUNNING,
 * ORK_ERROR_NO_DAEMON, ORK_ERROR_FAILED_TO_START, ORK_ERROR_QUOTA_EXCEEDED, ORK_ERROR_INTERRUPTED. */
int ork_recording_start(ork_client *client, uint32_t window, int microphone, ork_error **error);

/* A finished recording as the app sees it: an opaque id, never a file or a path. The movie
 * stays in replayd's store, which apps cannot read; the person watches, saves or deletes it
 * in the preview (ork_recording_show_preview). */
#define ORK_RECORDING_ID_SIZE 120
typedef struct ork_recording {
    char id[ORK_RECORDING_ID_SIZE]; /* NUL-terminated */
    double duration;                /* seconds */
    int64_t frames;                 /* pictures recorded; 0: stopped before the first one, and the store
                                       kept nothing (the id then names no recording) */
} ork_recording;

/* Stops the recording and keeps it in the store; fills *recording (may be NULL) with its id,
 * length and pictures (a recording stopped before its first picture is not kept). A recording that ended by itself (the screen resized, the disk filled) returns
 * why (ORK_ERROR_CONTENT_RESIZE, ORK_ERROR_INSUFFICIENT_STORAGE, ORK_ERROR_INTERRUPTED); what
 * was recorded is kept. Errors also: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_NOT_RUNNING. */
int ork_recording_stop(ork_client *client, ork_recording *recording, ork_error **error);

/* Asks replayd to show the person the preview of a recording this process made, where they
 * can watch, trim, save or delete it (ReplayKit's preview controller, out of process).
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_INVALID_ARGUMENT (recording_id NULL or empty),
 * ORK_ERROR_NOT_PERMITTED (no recording this process made has that id: another app's, or deleted),
 * ORK_ERROR_FAILED_TO_SHOW_PREVIEW (not kept: no picture; nobody to show it to), ORK_ERROR_NO_DAEMON. */
int ork_recording_show_preview(ork_client *client, const char *recording_id, ork_error **error);

/* Deletes a recording this process made (ReplayKit's discardRecording).
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_INVALID_ARGUMENT, ORK_ERROR_NOT_PERMITTED (as above),
 * ORK_ERROR_FAILED_TO_DISCARD_RECORDING (not kept: no picture), ORK_ERROR_NO_DAEMON. */
int ork_recording_discard(ork_client *client, const char *recording_id, ork_error **error);

/* ------------------------------------------------------------------- in-app capture */

#define ORK_PIXEL_FORMAT_I420 1 /* 8-bit Y, then U and V at half width and height; BT.601, video range */

/* One picture of the app's own windows (everything else black). Valid only during the
 * callback: copy what you keep. */
typedef struct ork_frame {
    int32_t width;              /* pixels, even */
    int32_t height;             /* pixels, even */
    int64_t time_ns;            /* when it was taken, CLOCK_MONOTONIC nanoseconds */
    uint32_t format;            /* ORK_PIXEL_FORMAT_I420 */
    int32_t plane_count;        /* 3: Y, U, V */
    const uint8_t *planes[3];   /* each plane's first byte */
    int32_t strides[3];         /* bytes from one row to the next, per plane */
    int32_t plane_heights[3];   /* rows, per plane */
} ork_frame;

/* Called on the client's callback thread for each picture; once more with frame NULL when
 * the capture ends by itself (replayd went away, the screen changed size), not after
 * ork_capture_stop(). */
typedef void (*ork_frame_callback)(ork_client *client, const ork_frame *frame, void *user_data);

/* Streams this app's own windows (ReplayKit's startCapture) at up to `fps` (1-60) pictures a
 * second to `callback`, after the person's consent (this call blocks until they answer).
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_INVALID_ARGUMENT (callback NULL, fps out of
 * range), ORK_ERROR_ALREADY_RUNNING, ORK_ERROR_USER_DECLINED, ORK_ERROR_NO_DAEMON,
 * ORK_ERROR_QUOTA_EXCEEDED, ORK_ERROR_FAILED_TO_START. */
int ork_capture_start(ork_client *client, int fps, ork_frame_callback callback, void *user_data,
                      ork_error **error);

/* Ends the capture. When it returns no frame callback runs or follows (one running on another
 * thread is waited for). Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_NOT_RUNNING. */
int ork_capture_stop(ork_client *client, ork_error **error);

/* How many pictures were dropped because a frame callback was still running when newer ones
 * came, since the client was made. Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_INVALID_ARGUMENT. */
int ork_capture_dropped_frames(ork_client *client, uint64_t *dropped, ork_error **error);

/* ---------------------------------------------------------------------- clip buffer */

/* Starts keeping the last `seconds` (1-3600) of this app's own windows and the sound, in
 * replayd (ReplayKit's startClipBuffering), after the person's consent (this call blocks until
 * they answer); announced on the desktop while it runs.
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_INVALID_ARGUMENT, ORK_ERROR_ALREADY_RUNNING,
 * ORK_ERROR_USER_DECLINED, ORK_ERROR_NO_DAEMON, ORK_ERROR_QUOTA_EXCEEDED, ORK_ERROR_FAILED_TO_START. */
int ork_clip_buffering_start(ork_client *client, double seconds, ork_error **error);

/* Writes the last `seconds` (fewer if buffering started later) as an MP4 movie at `path`,
 * replacing a file there (ReplayKit's exportClip); buffering goes on. The app may have this
 * movie because it holds its own windows only.
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_INVALID_ARGUMENT (path NULL or empty, seconds
 * not positive), ORK_ERROR_NOT_RUNNING, ORK_ERROR_FAILED_TO_SAVE_CLIP, ORK_ERROR_INTERRUPTED. */
int ork_clip_export(ork_client *client, const char *path, double seconds, ork_error **error);

/* Ends clip buffering; what was kept and not exported is gone.
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_NOT_RUNNING. */
int ork_clip_buffering_stop(ork_client *client, ork_error **error);

/* ---------------------------------------------------------------- broadcast picker */

#define ORK_BROADCAST_SCOPE_SCREEN 0 /* the whole screen (protected windows black) */
#define ORK_BROADCAST_SCOPE_APP 1    /* only this app's own windows, everything else black */

/* Asks replayd to show the person the broadcast picker (ReplayKit's RPBroadcastActivity-
 * ViewController, out of process); returns once it is shown. The person may start a broadcast
 * there, or not: follow it with ork_broadcast_watch().
 *   preferred_extension  an upload extension's id to narrow the picker to, or NULL for all
 *   scope                ORK_BROADCAST_SCOPE_SCREEN or ORK_BROADCAST_SCOPE_APP
 *   microphone           nonzero to offer the microphone too
 *   setup                NULL, or a NULL-terminated array of key, value, key, value, ...:
 *                        the preferred extension's settings that are not secret (a call's
 *                        server and room), shown to the person, who may change them and
 *                        types any secret there
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_INVALID_ARGUMENT (scope unknown, a key without
 * its value), ORK_ERROR_NO_DAEMON, ORK_ERROR_FAILED_TO_SHOW_PREVIEW (no such extension installed,
 * nobody to show it to). */
int ork_broadcast_picker_show(ork_client *client, const char *preferred_extension, int scope, int microphone,
                              const char *const *setup, ork_error **error);

#define ORK_BROADCAST_STARTING 0
#define ORK_BROADCAST_LIVE 1
#define ORK_BROADCAST_PAUSED 2
#define ORK_BROADCAST_FINISHED 3 /* over: no change follows */
#define ORK_BROADCAST_FAILED 4   /* over, `error` says why */
#define ORK_BROADCAST_OTHER 99   /* a state newer than this library */

/* A broadcast the person started from this app's picker, as the app sees it: its state,
 * never its pictures. Valid only during the callback. */
typedef struct ork_broadcast_status {
    const char *id;
    const char *extension_id;  /* the upload extension's id */
    int32_t scope;             /* ORK_BROADCAST_SCOPE_* */
    int32_t state;             /* ORK_BROADCAST_* */
    int64_t frames_sent;
    int64_t frames_dropped;
    const char *url;           /* where viewers watch, or NULL */
    const char *error;         /* why it failed, or NULL */
    size_t service_info_count; /* pairs in service_info */
    const char *const *service_info; /* key, value, key, value, ...: what the extension tells the app */
} ork_broadcast_status;

/* Called on the client's callback thread with each change of the broadcast: started, paused,
 * resumed, service info, ended. */
typedef void (*ork_broadcast_callback)(ork_client *client, const ork_broadcast_status *status, void *user_data);

/* Starts (or with a NULL callback stops) following the broadcast started from this client's
 * picker; set it before ork_broadcast_picker_show() to see every change.
 * Errors: ORK_ERROR_INVALID_HANDLE. */
int ork_broadcast_watch(ork_client *client, ork_broadcast_callback callback, void *user_data, ork_error **error);

/* Pause, resume or finish the broadcast started from this client's picker.
 * Errors: ORK_ERROR_INVALID_HANDLE, ORK_ERROR_NOT_RUNNING (none is live or paused),
 * ORK_ERROR_INTERRUPTED. */
int ork_broadcast_pause(ork_client *client, ork_error **error);
int ork_broadcast_resume(ork_client *client, ork_error **error);
int ork_broadcast_finish(ork_client *client, ork_error **error);

#ifdef __cplusplus
}
#endif

#endif /* OPENREPLAYKIT_H */
