#include "CReplayUI.h"

/// What a connected signal keeps: the handler (of the signal's kind) and its context.
typedef struct {
    void *handler;
    void *context;
    CReplayUI_Release release;
} Binding;

static Binding *binding_new(void *handler, void *context, CReplayUI_Release release) {
    Binding *binding = g_new0(Binding, 1);
    binding->handler = handler;
    binding->context = context;
    binding->release = release;
    return binding;
}

static void binding_free(gpointer data, GClosure *closure) {
    (void)closure;
    Binding *binding = data;
    if (binding->release) binding->release(binding->context);
    g_free(binding);
}

static gulong connect(gpointer instance, const char *signal, GCallback trampoline, Binding *binding) {
    return g_signal_connect_data(instance, signal, trampoline, binding, binding_free, 0);
}

static void on_plain(gpointer instance, gpointer data) {
    (void)instance;
    Binding *binding = data;
    ((CReplayUI_Handler)binding->handler)(binding->context);
}

gulong CReplayUI_on(gpointer instance, const char *signal, CReplayUI_Handler handler, void *context, CReplayUI_Release release) {
    return connect(instance, signal, G_CALLBACK(on_plain), binding_new((void *)handler, context, release));
}

static void on_notify(GObject *object, GParamSpec *spec, gpointer data) {
    (void)object; (void)spec;
    Binding *binding = data;
    ((CReplayUI_Handler)binding->handler)(binding->context);
}

gulong CReplayUI_on_notify(gpointer instance, const char *property, CReplayUI_Handler handler, void *context, CReplayUI_Release release) {
    char *signal = g_strconcat("notify::", property, NULL);
    gulong id = connect(instance, signal, G_CALLBACK(on_notify), binding_new((void *)handler, context, release));
    g_free(signal);
    return id;
}

static gboolean on_close_request(GtkWindow *window, gpointer data) {
    (void)window;
    Binding *binding = data;
    ((CReplayUI_Handler)binding->handler)(binding->context);
    return TRUE;
}

gulong CReplayUI_on_close_request(GtkWindow *window, CReplayUI_Handler handler, void *context, CReplayUI_Release release) {
    return connect(window, "close-request", G_CALLBACK(on_close_request), binding_new((void *)handler, context, release));
}

static gboolean on_key_pressed(GtkEventControllerKey *controller, guint keyval, guint keycode, GdkModifierType state, gpointer data) {
    (void)controller; (void)keycode;
    Binding *binding = data;
    return ((CReplayUI_KeyHandler)binding->handler)(binding->context, keyval, state);
}

gulong CReplayUI_on_key_pressed(GtkEventController *controller, CReplayUI_KeyHandler handler, void *context, CReplayUI_Release release) {
    return connect(controller, "key-pressed", G_CALLBACK(on_key_pressed), binding_new((void *)handler, context, release));
}

static gboolean on_event(GtkEventControllerLegacy *controller, GdkEvent *event, gpointer data) {
    (void)controller;
    Binding *binding = data;
    ((CReplayUI_EventHandler)binding->handler)(binding->context, event);
    return FALSE;
}

gulong CReplayUI_on_event(GtkEventController *controller, CReplayUI_EventHandler handler, void *context, CReplayUI_Release release) {
    return connect(controller, "event", G_CALLBACK(on_event), binding_new((void *)handler, context, release));
}

static void on_open(GApplication *application, GFile **files, gint count, gchar *hint, gpointer data) {
    (void)application;
    Binding *binding = data;
    char **paths = g_new0(char *, count + 1);
    for (gint i = 0; i < count; i++) paths[i] = g_file_get_path(files[i]);
    ((CReplayUI_OpenHandler)binding->handler)(binding->context, (const char *const *)paths, count, hint);
    for (gint i = 0; i < count; i++) g_free(paths[i]);
    g_free(paths);
}

gulong CReplayUI_on_open(GApplication *application, CReplayUI_OpenHandler handler, void *context, CReplayUI_Release release) {
    return connect(application, "open", G_CALLBACK(on_open), binding_new((void *)handler, context, release));
}

static gboolean run_once(gpointer data) {
    Binding *binding = data;
    ((CReplayUI_Handler)binding->handler)(binding->context);
    return G_SOURCE_REMOVE;
}

static void source_free(gpointer data) { binding_free(data, NULL); }

void CReplayUI_run_on_main(int priority, CReplayUI_Handler handler, void *context, CReplayUI_Release release) {
    g_idle_add_full(priority, run_once, binding_new((void *)handler, context, release), source_free);
}

guint CReplayUI_after(guint milliseconds, CReplayUI_Handler handler, void *context, CReplayUI_Release release) {
    return g_timeout_add_full(G_PRIORITY_DEFAULT, milliseconds, run_once, binding_new((void *)handler, context, release), source_free);
}

void CReplayUI_set_accessible_label(GtkWidget *widget, const char *label) {
    gtk_accessible_update_property(GTK_ACCESSIBLE(widget), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
}

static void on_response(GtkNativeDialog *dialog, int response, gpointer data) {
    (void)dialog;
    Binding *binding = data;
    ((CReplayUI_ResponseHandler)binding->handler)(binding->context, response);
}

gulong CReplayUI_on_response(GtkNativeDialog *dialog, CReplayUI_ResponseHandler handler, void *context, CReplayUI_Release release) {
    return connect(dialog, "response", G_CALLBACK(on_response), binding_new((void *)handler, context, release));
}
