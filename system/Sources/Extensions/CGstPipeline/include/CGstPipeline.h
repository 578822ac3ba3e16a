#ifndef CGSTPIPELINE_H
#define CGSTPIPELINE_H
/*
 * The gst extension's edge: every GStreamer and GObject call lives behind this small API.
 *
 * A pipeline is parsed from a launch description (gst-launch-1.0's syntax) that holds the
 * extension's own sources: an appsrc named "replay-video" for I420 pictures, and, when the
 * person's tail takes sound, an appsrc named "replay-audio" for F32 stereo at 48 kHz. Nothing
 * plays until cgst_pipeline_start, so the caller checks every element first
 * (cgst_pipeline_element_factory, cgst_pipeline_element_property).
 *
 * Threads: every function may be called from any thread; the error callback arrives on one of
 * GStreamer's threads.
 */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CGstPipeline CGstPipeline;

/* An error of the pipeline: "message (element)"; at most once per pipeline. */
typedef void (*CGstErrorCallback)(void *context, const char *message);
/* Gives back a picture pushed with `release`, once GStreamer is done with it. */
typedef void (*CGstReleaseCallback)(void *release_context);

/*
 * Prepares GStreamer once per process without scanning every installed plugin: the registry
 * goes to a file under `registry_dir`, and only the plugins named in `plugins` (NULL-ended,
 * "x264" for libgstx264.so) are loaded; one that is not installed is skipped, so its elements
 * do not exist. Returns 0, or -1 with `*error` (free with cgst_free).
 */
int cgst_initialize(const char *registry_dir, const char *const *plugins, char **error);

/*
 * Parses `description` into a pipeline, creating its elements but starting nothing. Returns
 * NULL with `*error` for a malformed description; `*missing` then names, comma-separated, the
 * elements GStreamer does not have (NULL when none is missing). Free both with cgst_free.
 */
CGstPipeline *cgst_pipeline_parse(const char *description, char **error, char **missing);
/* Stops the pipeline; no callback runs after it returns. */
void cgst_pipeline_free(CGstPipeline *pipeline);

/* The pipeline's elements, its bins' children not included. */
int32_t cgst_pipeline_element_count(CGstPipeline *pipeline);
/* The factory that made element `index` ("x264enc"), "" if none; free with cgst_free. */
char *cgst_pipeline_element_factory(CGstPipeline *pipeline, int32_t index);
/* The element's name ("mux", "filesink0"); free with cgst_free. */
char *cgst_pipeline_element_name(CGstPipeline *pipeline, int32_t index);
/*
 * The value of property `property` of element `index`, written as gst-launch would read it,
 * or NULL when the element has no such property or it is unset; free with cgst_free.
 */
char *cgst_pipeline_element_property(CGstPipeline *pipeline, int32_t index, const char *property);

/*
 * Plays the pipeline, its running time on CLOCK_MONOTONIC. `on_error` hears the first error
 * (a sink that lost its server, an element that refused its input). Returns 0, or -1 with
 * `*error`.
 */
int cgst_pipeline_start(CGstPipeline *pipeline, int32_t fps, void *context, CGstErrorCallback on_error, char **error);

/*
 * One I420 picture, tightly packed (Y, U, V), at `pts_ns` on CLOCK_MONOTONIC, its colour coded
 * with the BT.709 matrix if `bt709` (else BT.601), in full range if `full_range` (else video
 * range). Without `release` the bytes are copied; with it they are used in place until
 * `release` runs. Returns 0, or -1 if the pipeline does not take it (the picture is released).
 */
int cgst_pipeline_push_video(CGstPipeline *pipeline, const uint8_t *i420, size_t size, int32_t width, int32_t height,
                             int32_t bt709, int32_t full_range, int64_t pts_ns, CGstReleaseCallback release,
                             void *release_context);
/* Interleaved float32 stereo at 48 kHz, `frames` frames, the first at `pts_ns`; -1 without an audio source. */
int cgst_pipeline_push_audio(CGstPipeline *pipeline, const float *samples, int32_t frames, int64_t pts_ns);
/* 1 when the description has the "replay-audio" source. */
int cgst_pipeline_takes_audio(CGstPipeline *pipeline);

/*
 * Ends the stream (end-of-stream from every source) and waits up to `timeout_ms` for it to
 * reach every sink, so muxers finish their files. Returns 0 once it did, -1 on timeout or
 * error (with `*error`, when given).
 */
int cgst_pipeline_finish(CGstPipeline *pipeline, int32_t timeout_ms, char **error);

void cgst_free(void *pointer);

#ifdef __cplusplus
}
#endif
#endif
