import CGtk
import ReplayUIModel

/// A button that lets something be captured (Allow, Start): it acts only when the person
/// presses it. It is insensitive until its window has been on screen and focused for a moment
/// (`AllowArming`: no click-through from the app's window), and a click counts only while the
/// person's own click or key is being handled (`PersonPress`): an accessibility call alone
/// does nothing but say, on the button, how to press it.
final class PersonButton {
    let widget: UnsafeMutablePointer<GtkWidget>
    private let window: UnsafeMutablePointer<GtkWidget>
    private var arming = AllowArming()
    private var press = PersonPress()
    private var armTimer: UInt32 = 0
    private var retired = false
    /// The window's own condition besides arming (a picker with a service chosen, not starting).
    var isAvailable = true {
        didSet { rearm() }
    }

    /// - Parameter pressed: runs on the person's press, while the button is armed.
    init(_ label: String, in window: UnsafeMutablePointer<GtkWidget>, pressed: @escaping () -> Void) {
        self.window = window
        widget = gtk_button_new_with_label(label)!
        gtk_widget_set_sensitive(widget, 0)
        gtk_widget_add_css_class(widget, "suggested-action")
        Signals.on(widget, "clicked") { [weak self] in
            guard let self, !retired, isAvailable, arming.isArmed(at: MainLoop.now) else { return }
            guard press.clicked() else {
                // Said on the button (its tooltip, and its accessible description for a screen reader).
                gtk_widget_set_tooltip_text(widget, "Press \(label) with the mouse or the keyboard")
                return
            }
            pressed()
        }
        watchInput()
        watchArming()
    }

    /// The window goes: no timer outlives it.
    func retire() {
        retired = true
        MainLoop.cancel(armTimer)
        armTimer = 0
    }

    /// Sees every input event before the buttons do (capture phase): whether it is the
    /// person's press of this button.
    private func watchInput() {
        let legacy = gtk_event_controller_legacy_new()
        gtk_event_controller_set_propagation_phase(legacy, GTK_PHASE_CAPTURE)
        Signals.onEvent(legacy) { [weak self] event in
            guard let self else { return }
            press.witnessed(input(event))
            MainLoop.afterThisEvent { [weak self] in self?.press.eventHandled() }
        }
        gtk_widget_add_controller(window, legacy)
    }

    private func input(_ event: OpaquePointer) -> PersonPress.Input {
        switch gdk_event_get_event_type(event) {
        case GDK_BUTTON_RELEASE:
            var x = 0.0, y = 0.0
            guard gdk_event_get_position(event, &x, &y) != 0,
                  let picked = gtk_widget_pick(window, x, y, GTK_PICK_DEFAULT) else { return .pointerRelease(onAllow: false) }
            return .pointerRelease(onAllow: picked == widget || gtk_widget_is_ancestor(picked, widget) != 0)
        case GDK_KEY_PRESS, GDK_KEY_RELEASE:
            let key = Int32(bitPattern: gdk_key_event_get_keyval(event))
            let activates = [GDK_KEY_Return, GDK_KEY_KP_Enter, GDK_KEY_ISO_Enter, GDK_KEY_space, GDK_KEY_KP_Space].contains(key)
            return .key(activates: activates, allowFocused: gtk_root_get_focus(gtk(window)) == widget)
        default:
            return .other
        }
    }

    private func watchArming() {
        Signals.on(window, "map") { [weak self] in
            guard let self else { return }
            arming.shown(true, at: MainLoop.now)
            rearm()
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
        guard !retired else { return }
        MainLoop.cancel(armTimer)
        armTimer = 0
        let now = MainLoop.now
        gtk_widget_set_sensitive(widget, isAvailable && arming.isArmed(at: now) ? 1 : 0)
        if let from = arming.armedFrom, from > now {
            armTimer = MainLoop.after(from - now) { [weak self] in
                self?.armTimer = 0
                self?.rearm()
            }
        }
    }
}
