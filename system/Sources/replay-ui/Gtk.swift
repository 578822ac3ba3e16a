import CGtk
import CReplayUI

/// GObject's casts (`GTK_WINDOW (widget)`) are C macros: a pointer to one GTK type is passed
/// as the pointer type the call wants.
@inline(__always)
func gtk<From, To>(_ pointer: UnsafeMutablePointer<From>?) -> UnsafeMutablePointer<To>? {
    UnsafeMutableRawPointer(pointer)?.assumingMemoryBound(to: To.self)
}

@inline(__always)
func gtk<To>(_ pointer: OpaquePointer?) -> UnsafeMutablePointer<To>? {
    UnsafeMutableRawPointer(pointer)?.assumingMemoryBound(to: To.self)
}

/// The same, to a type whose struct C keeps private (GtkImage, GtkEventController).
@inline(__always)
func gtk<From>(_ pointer: UnsafeMutablePointer<From>?) -> OpaquePointer? {
    pointer.map(OpaquePointer.init)
}

/// A Swift closure kept alive by a connected signal or a main-loop source, and let go with it.
private final class Box<Body> {
    let body: Body
    init(_ body: Body) { self.body = body }
}

private func retained<Body>(_ body: Body) -> UnsafeMutableRawPointer {
    Unmanaged.passRetained(Box(body)).toOpaque()
}

private func unboxed<Body>(_ context: UnsafeMutableRawPointer?, as: Body.Type) -> Body {
    Unmanaged<Box<Body>>.fromOpaque(context!).takeUnretainedValue().body
}

private let release: CReplayUI_Release = { context in
    Unmanaged<AnyObject>.fromOpaque(context!).release()
}

private let runPlain: CReplayUI_Handler = { context in unboxed(context, as: (() -> Void).self)() }

/// Signals and main-loop sources with Swift closures (the C shim's trampolines).
enum Signals {
    /// A signal whose handler takes only the instance (clicked, map, unmap, destroy).
    @discardableResult
    static func on(_ instance: UnsafeMutableRawPointer?, _ signal: String, _ body: @escaping () -> Void) -> UInt {
        UInt(CReplayUI_on(instance, signal, runPlain, retained(body), release))
    }

    /// `notify::property`.
    static func onChange(_ instance: UnsafeMutableRawPointer?, of property: String, _ body: @escaping () -> Void) {
        _ = CReplayUI_on_notify(instance, property, runPlain, retained(body), release)
    }

    /// A window's close button (or Alt-F4): `body` decides; the window stays until destroyed.
    static func onCloseRequest(_ window: UnsafeMutablePointer<GtkWindow>?, _ body: @escaping () -> Void) {
        _ = CReplayUI_on_close_request(window, runPlain, retained(body), release)
    }

    /// A key pressed where `controller` listens: true when `body` used it.
    static func onKeyPressed(_ controller: OpaquePointer?,
                             _ body: @escaping (_ keyval: UInt32, _ state: GdkModifierType) -> Bool) {
        _ = CReplayUI_on_key_pressed(controller, { context, keyval, state in
            unboxed(context, as: ((UInt32, GdkModifierType) -> Bool).self)(keyval, state) ? 1 : 0
        }, retained(body), release)
    }

    /// Every input event where `controller` listens, passed on after `body` has seen it.
    static func onEvent(_ controller: OpaquePointer?, _ body: @escaping (OpaquePointer) -> Void) {
        _ = CReplayUI_on_event(controller, { context, event in
            guard let event else { return }
            unboxed(context, as: ((OpaquePointer) -> Void).self)(event)
        }, retained(body), release)
    }

    /// A native dialog's answer (the file chooser's): its response id.
    static func onResponse(_ dialog: UnsafeMutablePointer<GtkNativeDialog>?, _ body: @escaping (Int32) -> Void) {
        _ = CReplayUI_on_response(dialog, { context, response in
            unboxed(context, as: ((Int32) -> Void).self)(response)
        }, retained(body), release)
    }

    /// GApplication's open: the local paths of the files named, and the hint.
    static func onOpen(_ application: UnsafeMutablePointer<GApplication>?, _ body: @escaping ([String], String) -> Void) {
        _ = CReplayUI_on_open(application, { context, paths, count, hint in
            let named = (0..<Int(count)).compactMap { paths?[$0].map { String(cString: $0) } }
            unboxed(context, as: (([String], String) -> Void).self)(named, hint.map { String(cString: $0) } ?? "")
        }, retained(body), release)
    }
}

/// GTK's main loop, reached from other threads.
enum MainLoop {
    /// Runs `body` on the main loop soon (from any thread).
    static func post(_ body: @escaping @Sendable () -> Void) {
        CReplayUI_run_on_main(G_PRIORITY_DEFAULT, runPlain, retained(body as () -> Void), release)
    }

    /// Runs `body` once the main loop has finished what it is doing, before anything of
    /// lower priority (an event's handling is over; no bus message has been read yet).
    static func afterThisEvent(_ body: @escaping () -> Void) {
        CReplayUI_run_on_main(G_PRIORITY_HIGH, runPlain, retained(body), release)
    }

    /// Runs `body` once after `seconds`; the source, for `cancel`.
    @discardableResult
    static func after(_ seconds: Double, _ body: @escaping () -> Void) -> UInt32 {
        CReplayUI_after(UInt32(max(0, seconds) * 1000), runPlain, retained(body), release)
    }

    static func cancel(_ source: UInt32) {
        if source != 0 { g_source_remove(source) }
    }

    /// The monotonic clock, in seconds.
    static var now: Double { Double(g_get_monotonic_time()) / 1e6 }
}

/// Widgets the windows build alike.
enum Widgets {
    static func label(_ text: String, classes: [String] = []) -> UnsafeMutablePointer<GtkWidget> {
        let label = gtk_label_new(text)!
        gtk_label_set_xalign(gtk(label), 0)
        gtk_label_set_wrap(gtk(label), 1)
        gtk_label_set_max_width_chars(gtk(label), 50)
        for name in classes { gtk_widget_add_css_class(label, name) }
        return label
    }

    /// The desktop entry's icon: a theme name, or a file's path.
    static func icon(_ name: String?) -> UnsafeMutablePointer<GtkWidget> {
        guard let name, !name.isEmpty else { return gtk_image_new_from_icon_name("application-x-executable") }
        return name.hasPrefix("/") ? gtk_image_new_from_file(name) : gtk_image_new_from_icon_name(name)
    }

    /// A window of the program's, of a fixed size as a dialog is.
    static func dialogWindow(_ application: UnsafeMutablePointer<GtkApplication>?, title: String) -> UnsafeMutablePointer<GtkWidget> {
        let window = gtk_application_window_new(application)!
        gtk_window_set_title(gtk(window), title)
        gtk_window_set_resizable(gtk(window), 0)
        gtk_window_set_default_size(gtk(window), 460, -1)
        return window
    }

    /// Who asks, at the top of a window: the app's icon (named for a screen reader), and beside
    /// it the heading and, small, what identifies the app for sure.
    static func appHeader(icon name: String?, iconLabel: String, heading: String, identity: String) -> UnsafeMutablePointer<GtkWidget> {
        let header = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12)!
        let icon = Widgets.icon(name)
        gtk_image_set_pixel_size(gtk(icon), 48)
        CReplayUI_set_accessible_label(icon, iconLabel)
        gtk_widget_set_valign(icon, GTK_ALIGN_START)
        gtk_box_append(gtk(header), icon)
        let titles = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4)
        gtk_box_append(gtk(titles), label(heading, classes: ["title-3"]))
        let identityLabel = label(identity, classes: ["dim-label", "caption"])
        gtk_label_set_selectable(gtk(identityLabel), 0)
        gtk_box_append(gtk(titles), identityLabel)
        gtk_box_append(gtk(header), titles)
        return header
    }

    /// A box with the windows' margins around what it holds.
    static func content(spacing: Int32 = 12) -> UnsafeMutablePointer<GtkWidget> {
        let content = gtk_box_new(GTK_ORIENTATION_VERTICAL, spacing)!
        for set in [gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start, gtk_widget_set_margin_end] {
            set(content, 18)
        }
        return content
    }

    /// Asks the person for a folder (`save`: false) or a file to write (true) with GTK's
    /// native chooser (the desktop's portal where GTK uses one); `chosen` gets its path, once,
    /// and only if the person chose one.
    static func chooseFile(title: String, save: Bool, suggestedName: String? = nil, parent: UnsafeMutablePointer<GtkWidget>,
                           chosen: @escaping (String) -> Void) {
        let action = save ? GTK_FILE_CHOOSER_ACTION_SAVE : GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER
        let chooser = gtk_file_chooser_native_new(title, gtk(parent), action, save ? "_Save" : "_Choose", "_Cancel")!
        if let suggestedName { gtk_file_chooser_set_current_name(chooser, suggestedName) }
        gtk_native_dialog_set_modal(gtk(chooser), 1)
        Signals.onResponse(gtk(chooser)) { response in
            defer { g_object_unref(UnsafeMutableRawPointer(chooser)) }
            guard response == GTK_RESPONSE_ACCEPT.rawValue, let file = gtk_file_chooser_get_file(chooser) else { return }
            defer { g_object_unref(UnsafeMutableRawPointer(file)) }
            guard let path = g_file_get_path(file) else { return }
            defer { g_free(path) }
            chosen(String(cString: path))
        }
        gtk_native_dialog_show(gtk(chooser))
    }
}
