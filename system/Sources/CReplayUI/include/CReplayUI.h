#ifndef CREPLAYUI_H
#define CREPLAYUI_H
#include <gtk/gtk.h>

/// Signal trampolines for replay-ui: g_signal_connect is a macro, and each signal calls its
/// handler with its own arguments. Each connects `handler` with an opaque `context` (a Swift
/// closure's box), released by `release` when the object goes.

typedef void (*CReplayUI_Handler)(void *context);
typedef gboolean (*CReplayUI_KeyHandler)(void *context, guint keyval, GdkModifierType state);
typedef void (*CReplayUI_EventHandler)(void *context, GdkEvent *event);
typedef void (*CReplayUI_OpenHandler)(void *context, const char *const *paths, int count, const char *hint);
typedef void (*CReplayUI_Release)(void *context);

/// A signal whose handler takes only the instance: clicked, activate, map, unmap, destroy.
gulong CReplayUI_on(gpointer instance, const char *signal, CReplayUI_Handler handler, void *context, CReplayUI_Release release);
/// `notify::PROPERTY`: a property changed.
gulong CReplayUI_on_notify(gpointer instance, const char *property, CReplayUI_Handler handler, void *context, CReplayUI_Release release);
/// GtkWindow's close-request: the handler runs, and the window is not destroyed by it (TRUE).
gulong CReplayUI_on_close_request(GtkWindow *window, CReplayUI_Handler handler, void *context, CReplayUI_Release release);
/// GtkEventControllerKey's key-pressed: the handler's answer says whether the key was used.
gulong CReplayUI_on_key_pressed(GtkEventController *controller, CReplayUI_KeyHandler handler, void *context, CReplayUI_Release release);
/// GtkEventControllerLegacy's event: every event, seen and passed on (never stopped).
gulong CReplayUI_on_event(GtkEventController *controller, CReplayUI_EventHandler handler, void *context, CReplayUI_Release release);
typedef void (*CReplayUI_ResponseHandler)(void *context, int response);
/// GtkNativeDialog's response: the handler gets the response id (GTK_RESPONSE_ACCEPT…).
gulong CReplayUI_on_response(GtkNativeDialog *dialog, CReplayUI_ResponseHandler handler, void *context, CReplayUI_Release release);
/// GApplication's open: the files' local paths (NULL where one has none) and the hint.
gulong CReplayUI_on_open(GApplication *application, CReplayUI_OpenHandler handler, void *context, CReplayUI_Release release);
/// Runs `handler` once on the main loop (from any thread), at `priority`; then `release`.
void CReplayUI_run_on_main(int priority, CReplayUI_Handler handler, void *context, CReplayUI_Release release);
/// Runs `handler` once after `milliseconds` on the main loop, then `release` (also when the
/// source is removed first); returns the source, for g_source_remove.
guint CReplayUI_after(guint milliseconds, CReplayUI_Handler handler, void *context, CReplayUI_Release release);

/// What a screen reader calls `widget` (gtk_accessible_update_property is variadic).
void CReplayUI_set_accessible_label(GtkWidget *widget, const char *label);

#endif
