import CGtk
import CReplayUI
import ReplayIPC
import ReplayUIModel

/// The broadcast picker an app opened, in a window of the person's: who asks, what would be
/// broadcast, the services with their settings (secrets masked, typed by the person), the
/// microphone, and Start; once live, what the service says and Stop.
///
/// Start is a `PersonButton`, as the consent dialog's Allow: going live shows the screen, so
/// only the person's own click or key starts it. Cancel, Escape and the close button close
/// the window; a broadcast it started goes on, the app's to stop (or Stop here, first).
final class PickerWindow: @unchecked Sendable {
    // @unchecked: touched on GTK's main thread only; replies come back through `MainLoop.post`.
    let pickerID: String
    private let form: PickerForm
    private let socket: String
    private let window: UnsafeMutablePointer<GtkWidget>
    private var start: PersonButton!
    private let stop: UnsafeMutablePointer<GtkWidget>
    private let cancel: UnsafeMutablePointer<GtkWidget>
    private let status: UnsafeMutablePointer<GtkWidget>
    private let microphone: UnsafeMutablePointer<GtkWidget>
    /// Per service: its choice (none when it is the only one), the box of its settings, and
    /// how to read each setting's value, by key.
    private var choices: [(service: ExtensionManifest, button: UnsafeMutablePointer<GtkWidget>?,
                           settings: UnsafeMutablePointer<GtkWidget>, values: [String: () -> String])] = []
    private var closed = false
    private let onClose: () -> Void

    init(offer: PickerOffer, pickerID: String, socket: String, application: UnsafeMutablePointer<GtkApplication>?,
         onClose: @escaping () -> Void) {
        self.pickerID = pickerID
        self.socket = socket
        self.onClose = onClose
        form = PickerForm(offer)
        window = Widgets.dialogWindow(application, title: form.title)
        let content = Widgets.content()
        gtk_box_append(gtk(content), Widgets.appHeader(icon: offer.appIcon, iconLabel: form.iconLabel, heading: form.heading, identity: form.identity))
        gtk_box_append(gtk(content), Widgets.label(form.scopeLine))

        gtk_box_append(gtk(content), Widgets.label(form.servicesLine))
        microphone = gtk_check_button_new_with_label("Microphone")
        gtk_check_button_set_active(gtk(microphone), form.microphone ? 1 : 0)
        status = Widgets.label("", classes: ["dim-label"])
        stop = gtk_button_new_with_label("Stop")
        gtk_widget_add_css_class(stop, "destructive-action")
        gtk_widget_set_visible(stop, 0)
        cancel = gtk_button_new_with_label("Cancel")
        addServices(to: content)
        gtk_box_append(gtk(content), microphone)
        gtk_box_append(gtk(content), status)

        let buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)
        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        gtk_widget_set_margin_top(buttons, 6)
        gtk_box_append(gtk(buttons), cancel)
        gtk_box_append(gtk(buttons), stop)
        start = PersonButton("Start", in: window) { [weak self] in self?.startPressed() }
        start.isAvailable = !form.services.isEmpty
        gtk_box_append(gtk(buttons), start.widget)
        gtk_box_append(gtk(content), buttons)
        gtk_window_set_child(gtk(window), content)
        gtk_window_set_default_widget(gtk(window), cancel)

        Signals.on(cancel, "clicked") { [weak self] in self?.close() }
        Signals.on(stop, "clicked") { [weak self] in self?.stopPressed() }
        Signals.onCloseRequest(gtk(window)) { [weak self] in self?.close() }
        let keys = gtk_event_controller_key_new()
        gtk_event_controller_set_propagation_phase(keys, GTK_PHASE_CAPTURE)
        Signals.onKeyPressed(keys) { [weak self] keyval, _ in
            guard let self, keyval == UInt32(GDK_KEY_Escape) else { return false }
            close()
            return true
        }
        gtk_widget_add_controller(window, keys)
    }

    func present() { gtk_window_present(gtk(window)) }

    /// The window goes (its app has gone, or the person closed it); a running broadcast does not.
    func close() {
        guard !closed else { return }
        closed = true
        start.retire()
        gtk_window_destroy(gtk(window))
        onClose()
    }

    /// One choice per service, in a group (none for the only one); the chosen one's settings below it.
    private func addServices(to content: UnsafeMutablePointer<GtkWidget>) {
        var first: UnsafeMutablePointer<GtkWidget>?
        for service in form.services {
            var button: UnsafeMutablePointer<GtkWidget>?
            if form.services.count > 1 {
                button = gtk_check_button_new_with_label(VisibleText.of(service.displayName))
                if let first { gtk_check_button_set_group(gtk(button), gtk(first)) } else { first = button }
                gtk_box_append(gtk(content), button)
            }
            gtk_box_append(gtk(content), serviceLine(service))
            let settings = gtk_grid_new()!
            gtk_grid_set_row_spacing(gtk(settings), 6)
            gtk_grid_set_column_spacing(gtk(settings), 8)
            gtk_widget_set_margin_start(settings, 28)
            var values: [String: () -> String] = [:]
            for (row, field) in service.setupFields.enumerated() {
                let name = VisibleText.of(field.label) + (field.required || field.defaultValue != nil ? "" : " (optional)")
                gtk_grid_attach(gtk(settings), Widgets.label(name), 0, Int32(row), 1, 1)
                if field.kind == .choice, let options = field.choices, !options.isEmpty {
                    let menu = choiceMenu(options, initial: form.initialValue(of: field, in: service))
                    CReplayUI_set_accessible_label(menu, VisibleText.of(field.label))
                    gtk_grid_attach(gtk(settings), menu, 1, Int32(row), 1, 1)
                    values[field.key] = { options[min(Int(gtk_drop_down_get_selected(gtk(menu))), options.count - 1)] }
                    continue
                }
                let entry = field.kind == .secret ? gtk_password_entry_new()! : gtk_entry_new()!
                if field.kind == .number { gtk_entry_set_input_purpose(gtk(entry), GTK_INPUT_PURPOSE_NUMBER) }
                if field.kind == .secret { gtk_password_entry_set_show_peek_icon(gtk(entry), 1) }
                gtk_editable_set_text(gtk(entry), form.initialValue(of: field, in: service))
                gtk_widget_set_hexpand(entry, 1)
                CReplayUI_set_accessible_label(entry, VisibleText.of(field.label))
                gtk_grid_attach(gtk(settings), entry, 1, Int32(row), 1, 1)
                if field.kind == .directory {
                    let choose = gtk_button_new_with_label("Choose…")!
                    CReplayUI_set_accessible_label(choose, "Choose \(VisibleText.of(field.label))")
                    Signals.on(choose, "clicked") { [weak self] in
                        guard let self else { return }
                        Widgets.chooseFile(title: VisibleText.of(field.label), save: false, parent: window) { path in
                            gtk_editable_set_text(gtk(entry), path)
                        }
                    }
                    gtk_grid_attach(gtk(settings), choose, 2, Int32(row), 1, 1)
                }
                values[field.key] = { String(cString: gtk_editable_get_text(gtk(entry))) }
            }
            gtk_box_append(gtk(content), settings)
            choices.append((service, button, settings, values))
            if let button { Signals.onChange(button, of: "active") { [weak self] in self?.showChosenSettings() } }
        }
        if let first { gtk_check_button_set_active(gtk(first), 1) }
        showChosenSettings()
    }

    private var chosen: (service: ExtensionManifest, values: [String: () -> String])? {
        choices.first { isChosen($0.button) }.map { ($0.service, $0.values) }
    }

    /// The service's icon and what it is, under its name.
    private func serviceLine(_ service: ExtensionManifest) -> UnsafeMutablePointer<GtkWidget> {
        let line = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)!
        gtk_widget_set_margin_start(line, 28)
        let icon = Widgets.icon(form.icon(of: service) ?? "network-transmit")
        gtk_image_set_pixel_size(gtk(icon), 24)
        CReplayUI_set_accessible_label(icon, "Icon of \(VisibleText.of(service.displayName))")
        gtk_box_append(gtk(line), icon)
        gtk_box_append(gtk(line), Widgets.label(form.descriptionLine(of: service) ?? VisibleText.of(service.displayName), classes: ["dim-label"]))
        return line
    }

    /// A drop-down of `options`, `initial` selected where it is one of them.
    private func choiceMenu(_ options: [String], initial: String) -> UnsafeMutablePointer<GtkWidget> {
        let shown = options.map { strdup(VisibleText.of($0)) } + [nil]
        defer { shown.forEach { free($0) } }
        let menu = shown.map { UnsafePointer($0) }.withUnsafeBufferPointer { gtk_drop_down_new_from_strings($0.baseAddress)! }
        gtk_drop_down_set_selected(gtk(menu), UInt32(options.firstIndex(of: initial) ?? 0))
        gtk_widget_set_hexpand(menu, 1)
        return menu
    }

    /// The only service is chosen; of several, the one whose button is active.
    private func isChosen(_ button: UnsafeMutablePointer<GtkWidget>?) -> Bool {
        button.map { gtk_check_button_get_active(gtk($0)) != 0 } ?? true
    }

    private func showChosenSettings() {
        for choice in choices {
            gtk_widget_set_visible(choice.settings, isChosen(choice.button) && !choice.service.setupFields.isEmpty ? 1 : 0)
        }
    }

    private func startPressed() {
        guard let chosen else { return say("Choose a broadcast service.") }
        let values = chosen.values.mapValues { $0() }
        let setup: [String: String]
        switch form.setup(for: chosen.service, values: values) {
        case .success(let given): setup = given
        case .failure(let problem): return say(problem.description)
        }
        start.isAvailable = false
        say("Starting…")
        let request = ClientRequest.startPickedBroadcast(pickerID: pickerID, extensionID: chosen.service.id, setup: setup,
                                                         microphone: gtk_check_button_get_active(gtk(microphone)) != 0)
        DaemonRequest.send(request, to: socket, isReply: { if case .broadcastStarted = $0 { true } else { false } }) { [weak self] result in
            guard let self, !closed else { return }
            switch result {
            case .success(.broadcastStarted(let broadcast)):
                say(PickerForm.liveLine(broadcast))
                gtk_widget_set_visible(start.widget, 0)
                gtk_widget_set_visible(stop, 1)
                gtk_button_set_label(gtk(cancel), "Close")
                for choice in choices {
                    if let button = choice.button { gtk_widget_set_sensitive(button, 0) }
                    gtk_widget_set_sensitive(choice.settings, 0)
                }
                gtk_widget_set_sensitive(microphone, 0)
            case .success: break
            case .failure(let failure):
                say("Could not go live: \(VisibleText.of(failure.description))")
                start.isAvailable = true
            }
        }
    }

    private func stopPressed() {
        gtk_widget_set_sensitive(stop, 0)
        say("Stopping…")
        DaemonRequest.send(.stopPickedBroadcast(pickerID: pickerID), to: socket,
                           isReply: { if case .broadcastUpdated = $0 { true } else { false } }) { [weak self] result in
            guard let self, !closed else { return }
            switch result {
            case .success(.broadcastUpdated(let final)):
                say(final.state == .failed ? "Ended: \(VisibleText.of(final.lastError ?? "it failed"))" : "Ended.")
                gtk_widget_set_visible(stop, 0)
            case .success: break
            case .failure(let failure):
                say("Could not stop: \(VisibleText.of(failure.description))")
                gtk_widget_set_sensitive(stop, 1)
            }
        }
    }

    private func say(_ text: String) {
        gtk_label_set_text(gtk(status), text)
    }
}
