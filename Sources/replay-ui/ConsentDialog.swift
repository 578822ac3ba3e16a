import CGtk
import CReplayUI
import ReplayIPC
import ReplayUIModel

/// One app's request, asked in a window of its own: who asks (the app as the desktop names
/// it, and what the kernel says it is), what it would capture, Don't Allow and Allow.
///
/// Don't Allow is the default: Escape, the window's close button and Enter on the first focus
/// all decline. Allow does nothing until the window has been on screen and focused for a
/// moment (`AllowArming`), and counts only when the person's own click or key pressed it
/// (`PersonPress`): an accessibility call alone does not allow.
final class ConsentDialog {
    let requestID: String
    private let window: UnsafeMutablePointer<GtkWidget>
    private let allow: UnsafeMutablePointer<GtkWidget>
    private let decline: UnsafeMutablePointer<GtkWidget>
    private let picture: UnsafeMutablePointer<GtkWidget>
    private let previewCaption: UnsafeMutablePointer<GtkWidget>
    private var arming = AllowArming()
    private var press = PersonPress()
    private var armTimer: UInt32 = 0
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
        window = gtk_application_window_new(application)
        gtk_window_set_title(gtk(window), wording.title)
        gtk_window_set_resizable(gtk(window), 0)
        gtk_window_set_default_size(gtk(window), 460, -1)

        let content = gtk_box_new(GTK_ORIENTATION_VERTICAL, 12)
        for set in [gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start, gtk_widget_set_margin_end] {
            set(content, 18)
        }

        let header = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12)
        let icon = Self.icon(prompt.appIcon)
        gtk_image_set_pixel_size(gtk(icon), 48)
        CReplayUI_set_accessible_label(icon, wording.iconLabel)
        gtk_widget_set_valign(icon, GTK_ALIGN_START)
        gtk_box_append(gtk(header), icon)
        let titles = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4)
        let heading = Self.label(wording.heading, classes: ["title-3"])
        gtk_box_append(gtk(titles), heading)
        let identity = Self.label(wording.identity, classes: ["dim-label", "caption"])
        gtk_label_set_selectable(gtk(identity), 0)
        gtk_box_append(gtk(titles), identity)
        gtk_box_append(gtk(header), titles)
        gtk_box_append(gtk(content), header)

        gtk_box_append(gtk(content), Self.label("It would capture:"))
        let list = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2)
        gtk_widget_set_margin_start(list, 12)
        for thing in wording.captured { gtk_box_append(gtk(list), Self.label("• " + thing)) }
        gtk_box_append(gtk(content), list)

        // Live: exactly what the app would receive, black where it would see nothing.
        previewCaption = Self.label(wording.previewCaption, classes: ["dim-label"])
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
        allow = gtk_button_new_with_label("Allow")!
        gtk_widget_set_sensitive(allow, 0)
        gtk_widget_add_css_class(allow, "suggested-action")
        gtk_box_append(gtk(buttons), decline)
        gtk_box_append(gtk(buttons), allow)
        gtk_box_append(gtk(content), buttons)
        gtk_window_set_child(gtk(window), content)
        gtk_window_set_default_widget(gtk(window), decline)
        gtk_window_set_focus(gtk(window), decline)

        Signals.on(decline, "clicked") { [weak self] in self?.finish(allow: false) }
        Signals.on(allow, "clicked") { [weak self] in self?.allowClicked() }
        Signals.onCloseRequest(gtk(window)) { [weak self] in self?.finish(allow: false) }
        watchInput()
        watchArming()
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

    private func allowClicked() {
        guard arming.isArmed(at: MainLoop.now) else { return }
        guard press.clicked() else {
            // Pressed by an accessibility call (or any other way but the person's own input).
            // Said on the button (its tooltip, and its accessible description for a screen reader).
            gtk_widget_set_tooltip_text(allow, "Press Allow with the mouse or the keyboard")
            return
        }
        finish(allow: true)
    }

    private func finish(allow: Bool) {
        guard !answered else { return }
        answered = true
        answer(allow)
        destroy()
    }

    private func destroy() {
        MainLoop.cancel(armTimer)
        armTimer = 0
        gtk_window_destroy(gtk(window))
    }

    /// Sees every input event before the buttons do (capture phase): whether it is the
    /// person's press of Allow; and Escape, which declines.
    private func watchInput() {
        let legacy = gtk_event_controller_legacy_new()
        gtk_event_controller_set_propagation_phase(legacy, GTK_PHASE_CAPTURE)
        Signals.onEvent(legacy) { [weak self] event in
            guard let self else { return }
            press.witnessed(input(event))
            MainLoop.afterThisEvent { [weak self] in self?.press.eventHandled() }
        }
        gtk_widget_add_controller(window, legacy)

        let keys = gtk_event_controller_key_new()
        gtk_event_controller_set_propagation_phase(keys, GTK_PHASE_CAPTURE)
        Signals.onKeyPressed(keys) { [weak self] keyval, _ in
            guard let self, keyval == UInt32(GDK_KEY_Escape) else { return false }
            finish(allow: false)
            return true
        }
        gtk_widget_add_controller(window, keys)
    }

    private func input(_ event: OpaquePointer) -> PersonPress.Input {
        switch gdk_event_get_event_type(event) {
        case GDK_BUTTON_RELEASE:
            var x = 0.0, y = 0.0
            guard gdk_event_get_position(event, &x, &y) != 0,
                  let picked = gtk_widget_pick(window, x, y, GTK_PICK_DEFAULT) else { return .pointerRelease(onAllow: false) }
            return .pointerRelease(onAllow: picked == allow || gtk_widget_is_ancestor(picked, allow) != 0)
        case GDK_KEY_PRESS, GDK_KEY_RELEASE:
            let key = Int32(bitPattern: gdk_key_event_get_keyval(event))
            let activates = [GDK_KEY_Return, GDK_KEY_KP_Enter, GDK_KEY_ISO_Enter, GDK_KEY_space, GDK_KEY_KP_Space].contains(key)
            return .key(activates: activates, allowFocused: gtk_root_get_focus(gtk(window)) == allow)
        default:
            return .other
        }
    }

    /// Allow is sensitive only once the window has been shown and focused for a moment.
    private func watchArming() {
        Signals.on(window, "map") { [weak self] in
            guard let self else { return }
            arming.shown(true, at: MainLoop.now)
            // Don't Allow holds the focus once on screen, whatever became of the focus set
            // before: Enter or Space on a fresh dialog declines, and Tab reaches Allow.
            if gtk_root_get_focus(gtk(window)) == nil { gtk_widget_grab_focus(decline) }
            rearm()
            if let shown = onceShown {
                onceShown = nil
                MainLoop.afterThisEvent(shown)
            }
        }
        Signals.on(window, "unmap") { [weak self] in
            guard let self else { return }
            arming.shown(false, at: MainLoop.now)
            rearm()
        }
        Signals.onChange(window, of: "is-active") { [weak self] in
            guard let self else { return }
            arming.focused(gtk_window_is_active(gtk(window)) != 0, at: MainLoop.now)
            rearm()
        }
    }

    private func rearm() {
        guard !answered else { return }
        MainLoop.cancel(armTimer)
        armTimer = 0
        let now = MainLoop.now
        gtk_widget_set_sensitive(allow, arming.isArmed(at: now) ? 1 : 0)
        if let from = arming.armedFrom, from > now {
            armTimer = MainLoop.after(from - now) { [weak self] in
                self?.armTimer = 0
                self?.rearm()
            }
        }
    }

    private static func label(_ text: String, classes: [String] = []) -> UnsafeMutablePointer<GtkWidget> {
        let label = gtk_label_new(text)!
        gtk_label_set_xalign(gtk(label), 0)
        gtk_label_set_wrap(gtk(label), 1)
        gtk_label_set_max_width_chars(gtk(label), 50)
        for name in classes { gtk_widget_add_css_class(label, name) }
        return label
    }

    /// The desktop entry's icon: a theme name, or a file's path.
    private static func icon(_ name: String?) -> UnsafeMutablePointer<GtkWidget> {
        guard let name, !name.isEmpty else { return gtk_image_new_from_icon_name("application-x-executable") }
        return name.hasPrefix("/") ? gtk_image_new_from_file(name) : gtk_image_new_from_icon_name(name)
    }
}
