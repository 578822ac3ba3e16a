// replay-ui: OpenReplayKit's dialogs on the person's desktop (see DialogService).
#if canImport(Glibc)
import Glibc
#endif

// A few small windows need no GPU: GTK's cairo renderer draws them, and with GL switched off
// GDK does not load the GL drivers to choose a visual either. A GL context costs a dialog some
// 120 ms before its first frame, and tens of megabytes with a software GL (bench/run's dialog
// rows). The person's own GSK_RENDERER and GDK_DEBUG win.
setenv("GSK_RENDERER", "cairo", 0)
setenv("GDK_DEBUG", "gl-disable", 0)
exit(DialogService().run())
