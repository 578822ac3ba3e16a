#ifndef CGSTAPP_SHIM_H
#define CGSTAPP_SHIM_H
/* GStreamer's core and appsrc from Debian's packages, for the gst extension's C target (CGstPipeline). */
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#endif
