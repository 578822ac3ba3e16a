#ifndef CGSTREAMER_SHIM_H
#define CGSTREAMER_SHIM_H
/* GStreamer from Debian's packages, for the WebRTC extension's C target (CWebRTC). */
#ifndef GST_USE_UNSTABLE_API
#define GST_USE_UNSTABLE_API 1 /* the WebRTC library's API is marked unstable, and is what webrtcbin speaks */
#endif
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/sdp/sdp.h>
#include <gst/video/video.h>
#include <gst/webrtc/webrtc.h>
#endif
