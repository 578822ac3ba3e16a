import CGtk
import CReplayUI
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import ReplayIPC
import ReplayUIModel

/// A recording an app made, shown to the person (ReplayKit's preview controller): it plays
/// (GTK's GStreamer media backend), its start and end may be trimmed, and it is saved where
/// the person chooses, or deleted. The app never sees any of it.
///
/// The movie is copied out of the store into a private file to play, in the person's cache
/// folder (the store is replayd's alone); a save asks replayd for the kept span, which it cuts without re-encoding but at the
/// edges, and writes it beside the chosen file before putting it in place.
final class PreviewWindow: @unchecked Sendable {
    // @unchecked: touched on GTK's main thread only; replies come back through `MainLoop.post`.
    let recordingID: String
    private let socket: String
    private let window: UnsafeMutablePointer<GtkWidget>
    private let video: UnsafeMutablePointer<GtkWidget>
    private let startSpin: UnsafeMutablePointer<GtkWidget>
    private let endSpin: UnsafeMutablePointer<GtkWidget>
    private let summary: UnsafeMutablePointer<GtkWidget>
    private let status: UnsafeMutablePointer<GtkWidget>
    private let save: UnsafeMutablePointer<GtkWidget>
    private let delete: UnsafeMutablePointer<GtkWidget>
    private var span = TrimSpan(duration: 0)
    /// The private copy the player plays; removed with the window.
    private let playable: String
    private var deleteArmed: UInt32 = 0
    /// What waits for the movie to be there.
    private var controls: [UnsafeMutablePointer<GtkWidget>] = []
    private var closed = false
    private var busy = false
    private let onClose: () -> Void

    init(offer: PreviewOffer, socket: String, application: UnsafeMutablePointer<GtkApplication>?, onClose: @escaping () -> Void) {
        recordingID = offer.recordingID
        self.socket = socket
        self.onClose = onClose
        // On disk, in a folder of the person's only: $XDG_RUNTIME_DIR is usually memory (tmpfs),
        // and a long recording would take that much of it.
        let folder = String(cString: g_get_user_cache_dir()) + "/openreplaykit"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        playable = "\(folder)/preview-\(getpid())-\(offer.recordingID.filter { $0.isLetter || $0.isNumber || $0 == "-" }).mp4"
        let app = VisibleText.of(String(offer.executable.split(separator: "/").last ?? Substring(offer.executable)))

        window = gtk_application_window_new(application)
        gtk_window_set_title(gtk(window), "Recording")
        gtk_window_set_default_size(gtk(window), 560, -1)
        let content = Widgets.content()
        gtk_box_append(gtk(content), Widgets.label("\(app) made this recording", classes: ["title-3"]))
        gtk_box_append(gtk(content), Widgets.label(VisibleText.of(offer.executable), classes: ["dim-label", "caption"]))

        video = gtk_video_new()
        gtk_widget_set_size_request(video, 520, 292)
        CReplayUI_set_accessible_label(video, "The recording")
        gtk_box_append(gtk(content), video)

        // Trimming: two numbers a keyboard and a screen reader reach, and "here" from the player.
        let trim = gtk_grid_new()!
        gtk_grid_set_row_spacing(gtk(trim), 6)
        gtk_grid_set_column_spacing(gtk(trim), 8)
        startSpin = Self.spin(label: "Trim start (seconds)")
        endSpin = Self.spin(label: "Trim end (seconds)")
        let startHere = gtk_button_new_with_label("Start here")!
        let endHere = gtk_button_new_with_label("End here")!
        gtk_grid_attach(gtk(trim), Widgets.label("Start"), 0, 0, 1, 1)
        gtk_grid_attach(gtk(trim), startSpin, 1, 0, 1, 1)
        gtk_grid_attach(gtk(trim), startHere, 2, 0, 1, 1)
        gtk_grid_attach(gtk(trim), Widgets.label("End"), 0, 1, 1, 1)
        gtk_grid_attach(gtk(trim), endSpin, 1, 1, 1, 1)
        gtk_grid_attach(gtk(trim), endHere, 2, 1, 1, 1)
        gtk_box_append(gtk(content), trim)
        summary = Widgets.label("")
        gtk_box_append(gtk(content), summary)
        status = Widgets.label("Loading…", classes: ["dim-label"])
        gtk_box_append(gtk(content), status)

        let buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)
        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        delete = gtk_button_new_with_label("Delete")!
        gtk_widget_add_css_class(delete, "destructive-action")
        save = gtk_button_new_with_label("Save…")!
        gtk_widget_add_css_class(save, "suggested-action")
        let close = gtk_button_new_with_label("Close")!
        gtk_box_append(gtk(buttons), delete)
        gtk_box_append(gtk(buttons), close)
        gtk_box_append(gtk(buttons), save)
        gtk_box_append(gtk(content), buttons)
        gtk_window_set_child(gtk(window), content)
        for widget in [save, delete, startSpin, endSpin, startHere, endHere] { gtk_widget_set_sensitive(widget, 0) }

        Signals.on(startSpin, "value-changed") { [weak self] in self?.spun() }
        Signals.on(endSpin, "value-changed") { [weak self] in self?.spun() }
        Signals.on(startHere, "clicked") { [weak self] in self?.markHere(start: true) }
        Signals.on(endHere, "clicked") { [weak self] in self?.markHere(start: false) }
        Signals.on(save, "clicked") { [weak self] in self?.savePressed() }
        Signals.on(delete, "clicked") { [weak self] in self?.deletePressed() }
        Signals.on(close, "clicked") { [weak self] in self?.close() }
        Signals.onCloseRequest(gtk(window)) { [weak self] in self?.close() }
        controls = [save, delete, startSpin, endSpin, startHere, endHere]
        load()
    }

    func present() { gtk_window_present(gtk(window)) }

    /// The window goes (closed, or the recording deleted); its private copy with it.
    func close() {
        guard !closed else { return }
        closed = true
        MainLoop.cancel(deleteArmed)
        gtk_video_set_file(gtk(video), nil)
        try? FileManager.default.removeItem(atPath: playable)
        gtk_window_destroy(gtk(window))
        onClose()
    }

    /// Its length from the store's list, and the movie copied out to play.
    private func load() {
        let id = recordingID
        DaemonRequest.send(.listRecordings, to: socket, isReply: { if case .recordings = $0 { true } else { false } }) { [weak self] result in
            guard let self, !closed else { return }
            guard case .success(.recordings(let list)) = result, let info = list.first(where: { $0.id == id }) else {
                if case .failure(let failure) = result { return say("Cannot show the recording: \(failure)") }
                return say("The recording is no longer in the store.")
            }
            span = TrimSpan(duration: info.duration)
            for spin in [startSpin, endSpin] { gtk_spin_button_set_range(gtk(spin), 0, max(info.duration, TrimSpan.shortest)) }
            showSpan()
            DaemonRequest.export(id, into: playable, socket: socket, progress: { [weak self] fraction in
                self?.say("Loading… \(Int(fraction * 100))%")
            }, done: { [weak self] failure in
                guard let self, !closed else { return }
                if let failure { return say("Cannot show the recording: \(failure)") }
                say("")
                gtk_video_set_filename(gtk(video), playable)
                controls.forEach { gtk_widget_set_sensitive($0, 1) }
            })
        }
    }

    private var adjusting = false

    private func spun() {
        guard !adjusting else { return }
        span.setStart(gtk_spin_button_get_value(gtk(startSpin)))
        span.setEnd(gtk_spin_button_get_value(gtk(endSpin)))
        showSpan()
    }

    /// The player's position becomes the start or the end.
    private func markHere(start: Bool) {
        guard let stream = gtk_video_get_media_stream(gtk(video)) else { return }
        let seconds = Double(gtk_media_stream_get_timestamp(stream)) / 1e6
        if start { span.setStart(seconds) } else { span.setEnd(seconds) }
        showSpan()
    }

    private func showSpan() {
        adjusting = true
        gtk_spin_button_set_value(gtk(startSpin), span.start)
        gtk_spin_button_set_value(gtk(endSpin), span.end)
        adjusting = false
        gtk_label_set_text(gtk(summary), span.summary)
    }

    private func savePressed() {
        let name = "\(recordingID).mp4"
        Widgets.chooseFile(title: "Save the recording", save: true, suggestedName: name, parent: window) { [weak self] path in
            self?.save(to: path)
        }
    }

    /// Written beside the target under another name and renamed once complete: a failed save
    /// never leaves half a movie, nor replaces a file with one.
    private func save(to path: String) {
        guard !busy else { return }
        busy = true
        gtk_widget_set_sensitive(save, 0)
        let file = URL(fileURLWithPath: path)
        let partial = file.deletingLastPathComponent().path + "/.\(file.lastPathComponent).partial"
        let kept = span.exportSpan
        DaemonRequest.export(recordingID, from: kept?.from, to: kept?.to, into: partial, socket: socket, progress: { [weak self] fraction in
            self?.say("Saving… \(Int(fraction * 100))%")
        }, done: { [weak self] failure in
            var failure = failure
            if failure == nil {
                if rename(partial, path) != 0 {
                    failure = DaemonRequest.Failure(description: "cannot put the movie at \(path): \(String(cString: strerror(errno)))")
                    unlink(partial)
                }
            }
            guard let self, !closed else { return }
            busy = false
            gtk_widget_set_sensitive(save, 1)
            say(failure.map { "Not saved: \(VisibleText.of($0.description))" } ?? "Saved to \(VisibleText.of(path))")
        })
    }

    /// Deleting asks once more: a second press within 5 s deletes from the store, for good.
    private func deletePressed() {
        guard deleteArmed != 0 else {
            gtk_button_set_label(gtk(delete), "Delete for good")
            say("Press again to delete the recording from the store.")
            deleteArmed = MainLoop.after(5) { [weak self] in
                guard let self else { return }
                deleteArmed = 0
                gtk_button_set_label(gtk(delete), "Delete")
                say("")
            }
            return
        }
        MainLoop.cancel(deleteArmed)
        deleteArmed = 0
        gtk_widget_set_sensitive(delete, 0)
        DaemonRequest.send(.deleteRecording(id: recordingID), to: socket, isReply: { if case .recordingDeleted = $0 { true } else { false } }) {
            [weak self] result in
            guard let self, !closed else { return }
            switch result {
            case .success: close()
            case .failure(let failure):
                say("Not deleted: \(VisibleText.of(failure.description))")
                gtk_widget_set_sensitive(delete, 1)
            }
        }
    }

    private func say(_ text: String) {
        gtk_label_set_text(gtk(status), text)
    }

    private static func spin(label: String) -> UnsafeMutablePointer<GtkWidget> {
        let spin = gtk_spin_button_new_with_range(0, 1, 0.1)!
        gtk_spin_button_set_digits(gtk(spin), 1)
        CReplayUI_set_accessible_label(spin, label)
        return spin
    }
}
