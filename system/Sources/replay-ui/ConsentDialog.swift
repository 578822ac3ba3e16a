import CGtk
import CReplayUI
import ReplayIPC
import ReplayUIModel

/// One app's request, asked in a window of its own: who asks (the app as the desktop names
/// it, and what the kernel says it is), what it would capture, Don't Allow and Allow.
///
/// Don't Allow is the default: Escape, the window's close button and Enter on the first focus
/// all decline. Allow is a `PersonButton`: only the person's own click or key, once the
/// window has been on screen and focused for a moment, allows.
final class ConsentDialog {
    let requestID: String
    private let window: UnsafeMutablePointer<GtkWidget>
    private var allow: PersonButton!
    private let decline: UnsafeMutablePointer<GtkWidget>
    private let picture: UnsafeMutablePointer<GtkWidget>
    private let previewCaption: UnsafeMutablePointer<GtkWidget>
    private var answered = false
    private let answer: (Bool) -> Void
    /// Runs once the window is first on screen (the live picture is asked for then, so that its
    /// capture process does not start while the window draws its first frame).
    var onceShown: (() -> Void)?

    /// - Parameter answer: the person's answer, once; the window closes itself after.
    init(prompt: ConsentPrompt, application: UnsafeMutablePointer<GtkApplication>?, answer: @escaping (Bool) -> Void) {
        requestID = prompt.requestID
        self.answer = answer
        let wording = ConsentWording(prompt)
        window = Widgets.dialogWindow(application, title: wording.title)
        let content = Widgets.content()
        gtk_box_append(gtk(content), Widgets.appHeader(icon: prompt.appIcon, iconLabel: wording.iconLabel,
                                                       heading: wording.heading, identity: wording.identity))

        gtk_box_append(gtk(content), Widgets.label("It would capture:"))
        let list = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2)
        gtk_widget_set_margin_start(list, 12)
        for thing in wording.captured { gtk_box_append(gtk(list), Widgets.label("• " + thing)) }
        gtk_box_append(gtk(content), list)

        // Live: exactly what the app would receive, black where it would see nothing.
        previewCaption = Widgets.label(wording.previewCaption, classes: ["dim-label"])
        gtk_box_append(gtk(content), previewCaption)
        picture = gtk_picture_new()
        gtk_picture_set_can_shrink(gtk(picture), 1)
        gtk_widget_set_size_request(picture, Int32(AgentLink.thumbnailBox.width), Int32(AgentLink.thumbnailBox.height))
        gtk_widget_set_halign(picture, GTK_ALIGN_CENTER)
        CReplayUI_set_accessible_label(picture, wording.previewCaption)
        gtk_box_append(gtk(content), picture)

        let buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)
        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        gtk_widget_set_margin_top(buttons, 6)
        decline = gtk_button_new_with_label("Don't Allow")!
        gtk_box_append(gtk(buttons), decline)
        allow = PersonButton("Allow", in: window) { [weak self] in self?.finish(allow: true) }
        gtk_box_append(gtk(buttons), allow.widget)
        gtk_box_append(gtk(content), buttons)
        gtk_window_set_child(gtk(window), content)
        gtk_window_set_default_widget(gtk(window), decline)
        gtk_window_set_focus(gtk(window), decline)

        Signals.on(decline, "clicked") { [weak self] in self?.finish(allow: false) }
        Signals.onCloseRequest(gtk(window)) { [weak self] in self?.finish(allow: false) }
        watchEscape()
        watchMapping()
    }

    func present() { gtk_window_present(gtk(window)) }

    /// The newest picture of what the app would receive.
    func show(_ thumbnail: Thumbnail) {
        let bytes = thumbnail.rgb.withUnsafeBytes { g_bytes_new($0.baseAddress, gsize($0.count)) }
        let texture = gdk_memory_texture_new(Int32(thumbnail.width), Int32(thumbnail.height), GDK_MEMORY_R8G8B8, bytes, gsize(thumbnail.width * 3))
        g_bytes_unref(bytes)
        gtk_picture_set_paintable(gtk(picture), texture)
        g_object_unref(UnsafeMutableRawPointer(texture))
    }

    /// No more pictures: with `reason`, none could be given, and the dialog says why.
    func previewEnded(reason: String?) {
        guard let reason else { return }
        gtk_label_set_text(gtk(previewCaption), "No live preview: \(VisibleText.of(reason))")
        gtk_widget_set_visible(picture, 0)
    }

    /// The question ended elsewhere (answered on another agent, timed out, the app gone).
    func close() {
        answered = true
        destroy()
    }

    private func finish(allow: Bool) {
        guard !answered else { return }
        answered = true
        answer(allow)
        destroy()
    }

    private func destroy() {
        allow.retire()
        gtk_window_destroy(gtk(window))
    }

    /// Escape declines, wherever the focus is.
    private func watchEscape() {
        let keys = gtk_event_controller_key_new()
        gtk_event_controller_set_propagation_phase(keys, GTK_PHASE_CAPTURE)
        Signals.onKeyPressed(keys) { [weak self] keyval, _ in
            guard let self, keyval == UInt32(GDK_KEY_Escape) else { return false }
            finish(allow: false)
            return true
        }
        gtk_widget_add_controller(window, keys)
    }

    private func watchMapping() {
        Signals.on(window, "map") { [weak self] in
            guard let self else { return }
            // Don't Allow holds the focus once on screen, whatever became of the focus set
            // before: Enter or Space on a fresh dialog declines, and Tab reaches Allow.
            if gtk_root_get_focus(gtk(window)) == nil { gtk_widget_grab_focus(decline) }
            if let shown = onceShown {
                onceShown = nil
                MainLoop.afterThisEvent(shown)
            }
        }
    }
}
