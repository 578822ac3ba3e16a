#ifndef CWEBRTC_H
#define CWEBRTC_H
/*
 * The WebRTC extension's edge: every GStreamer and GObject call lives behind this small API.
 *
 * One session is one encoder pipeline (I420 -> x264 H.264 constrained baseline, F32 stereo
 * 48 kHz -> Opus) fanned out through tees to any number of peers, each its own webrtcbin
 * (ICE with libnice, DTLS-SRTP, RTCP, NACK/RTX) with its own payloaders, send-only.
 *
 * Threads: every function may be called from any thread. The blocking ones (offer, answer,
 * stats) wait at most the timeout they are given; never call them from a GStreamer callback.
 * Callbacks arrive on GStreamer's threads.
 */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CWebRTCSession CWebRTCSession;

/* Connection state of a peer (RTCPeerConnectionState). */
typedef enum {
    CWEBRTC_PEER_NEW = 0,
    CWEBRTC_PEER_CONNECTING = 1,
    CWEBRTC_PEER_CONNECTED = 2,
    CWEBRTC_PEER_DISCONNECTED = 3,
    CWEBRTC_PEER_FAILED = 4,
    CWEBRTC_PEER_CLOSED = 5,
} CWebRTCPeerState;

typedef void (*CWebRTCStateCallback)(void *context, int32_t peer, int32_t state);
/* An error of the pipeline (peer 0) or of one peer. */
typedef void (*CWebRTCErrorCallback)(void *context, int32_t peer, const char *message);
/* Gives back a picture pushed with `release`, once GStreamer is done with it. */
typedef void (*CWebRTCReleaseCallback)(void *release_context);

typedef struct {
    int32_t fps;                 /* declared frame rate (the cap), e.g. 15 or 30 */
    int32_t video_kbps;          /* start bitrate */
    int32_t audio_bps;           /* Opus bitrate */
    int32_t keyframe_interval;   /* frames between keyframes at most */
    const char *stun_server;     /* "stun://host:port" or NULL */
    void *context;
    CWebRTCStateCallback on_state;
    CWebRTCErrorCallback on_error;
} CWebRTCConfig;

typedef struct {
    int32_t connected;           /* 1 when the peer's connection state is connected */
    uint64_t video_packets_sent;
    uint64_t video_bytes_sent;
    uint64_t audio_packets_sent;
    uint64_t nack_received;
    uint64_t pli_received;
    uint64_t fir_received;
    uint64_t retransmitted_packets;
    int32_t have_report;         /* 1 once a receiver report arrived for video */
    double fraction_lost;        /* video, from the last receiver report (0...1) */
    int64_t packets_lost;        /* video, cumulative */
    double round_trip_time;      /* seconds, 0 if unknown */
    double jitter;               /* seconds */
    int64_t remb_bps;            /* the receiver's latest estimate of what it can take (REMB), bit/s; 0: none yet */
} CWebRTCPeerStats;

/*
 * Prepares GStreamer once per process without scanning every installed plugin: the registry
 * goes to a file under `registry_dir` (a writable tmpfs in the sandbox), no plugin is
 * scanned, and only the few plugins WebRTC needs are loaded. Returns 0 or -1 with `*error`
 * (free with cwebrtc_free).
 */
int cwebrtc_initialize(const char *registry_dir, char **error);

CWebRTCSession *cwebrtc_session_new(const CWebRTCConfig *config, char **error);
/* Stops the pipeline and every peer; no callback runs after it returns. */
void cwebrtc_session_free(CWebRTCSession *session);

/*
 * One I420 picture, tightly packed (Y, U, V), at `pts_ns` on CLOCK_MONOTONIC, its colour coded
 * with the BT.709 matrix if `bt709` (else BT.601), in full range if `full_range` (else video
 * range, Y 16-235): the stream is tagged so. Without
 * `release` the bytes are copied; with it they are used in place until `release` runs.
 * Returns 0, or -1 if the pipeline is not running (the picture is released at once).
 */
int cwebrtc_push_video(CWebRTCSession *session, const uint8_t *i420, size_t size, int32_t width, int32_t height,
                       int32_t bt709, int32_t full_range, int64_t pts_ns, CWebRTCReleaseCallback release,
                       void *release_context);
/* Interleaved float32 stereo at 48 kHz, `frames` frames, first one at `pts_ns` (CLOCK_MONOTONIC). */
int cwebrtc_push_audio(CWebRTCSession *session, const float *samples, int32_t frames, int64_t pts_ns);

/* Asks the encoder for a keyframe now (a viewer joined). */
void cwebrtc_request_keyframe(CWebRTCSession *session);
void cwebrtc_set_video_bitrate(CWebRTCSession *session, int32_t kbps);
int32_t cwebrtc_video_bitrate(CWebRTCSession *session);

/*
 * WHIP: a new send-only peer that makes the offer. Returns the peer id (> 0) with
 * `*offer` (all ICE candidates gathered) or -1 with `*error`.
 */
int32_t cwebrtc_peer_offer(CWebRTCSession *session, int32_t timeout_ms, char **offer, char **error);
int cwebrtc_peer_set_answer(CWebRTCSession *session, int32_t peer, const char *answer, char **error);
/* WHEP: a new send-only peer answering `offer`. Returns the peer id with `*answer`, or -1. */
int32_t cwebrtc_peer_answer(CWebRTCSession *session, const char *offer, int32_t timeout_ms, char **answer, char **error);
/* Ends one peer (idempotent). */
void cwebrtc_peer_remove(CWebRTCSession *session, int32_t peer);
/* Webrtcbin's statistics for one peer; 0, or -1 when the peer is gone or did not answer in time. */
int cwebrtc_peer_stats(CWebRTCSession *session, int32_t peer, int32_t timeout_ms, CWebRTCPeerStats *stats);

void cwebrtc_free(void *pointer);

#ifdef __cplusplus
}
#endif
#endif
