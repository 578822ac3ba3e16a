import CGtk
import FoundationEssentials
import ReplaySystem
import ReplayIPC
import ReplayUIModel

/// The program: a GtkApplication named `org.openreplaykit.UI` on the person's session bus.
///
/// replayd has the bus start it (D-Bus activation, `--gapplication-service`) with an `Open`
/// naming the daemon's socket; it connects there as a consent agent and shows a dialog for
/// each question it is handed. With nothing shown it holds nothing, and GApplication ends it
/// after `idleExit`. Run by the person (no `--gapplication-service`), it answers for their
/// replayd until closed, as `replay consent-agent` does on a terminal.
final class DialogService: @unchecked Sendable {
    // @unchecked: everything is touched on GTK's main thread only; the links' reader threads
    // hand their events over through `MainLoop.post`.
    static let applicationID = "org.openreplaykit.UI"
    /// How long the program stays once it shows nothing (a question often follows another).
    static let idleExit: UInt32 = 2000

    private let application: UnsafeMutablePointer<GtkApplication>
    private let sockets = DaemonSockets()
    private var links: [String: AgentLink] = [:]
    private var dialogs: [String: (dialog: ConsentDialog, socket: String)] = [:]
    private var pickers: [String: (window: PickerWindow, socket: String)] = [:]
    private var previews: [String: (window: PreviewWindow, socket: String)] = [:]

    init() {
        application = gtk_application_new(Self.applicationID, G_APPLICATION_HANDLES_OPEN)
        g_application_set_inactivity_timeout(gtk(application), Self.idleExit)
        g_application_set_option_context_parameter_string(gtk(application), "[SOCKET…]")
        g_application_set_option_context_summary(gtk(application), """
            OpenReplayKit's dialogs: asks you whether an app may capture your screen.
            """)
        g_application_set_option_context_description(gtk(application), """
            replayd starts this program on your session bus when an app asks to capture and no \
            consent agent runs; it shows a window for each request (the app as your desktop \
            names it, with the executable, process and user the kernel reports, and what it \
            would capture) and exits once it shows nothing. Allow can be pressed only with your \
            own mouse or keyboard, once the window has been shown and focused for a moment.

            Run it yourself to answer for your replayd until you close it (as 'replay \
            consent-agent' does on a terminal); SOCKET names replayd's socket (default: \
            $OPENREPLAYKIT_SOCKET, else your replayd's). Only your own replayd's socket and the \
            system's are answered for.
            """)
        Signals.on(application, "activate") { [weak self] in self?.startedByThePerson() }
        Signals.onOpen(gtk(application)) { [weak self] paths, _ in self?.opened(paths) }
    }

    func run() -> Int32 {
        var arguments = CommandLine.arguments.map { strdup($0) }
        defer { arguments.forEach { free($0) } }
        return g_application_run(gtk(application), Int32(arguments.count), &arguments)
    }

    /// Started by the person: answer for their replayd until the program is closed.
    private func startedByThePerson() {
        guard connect(sockets.preferred) else { return }
        g_application_hold(gtk(application))
    }

    /// replayd asks (through the bus, or the person named a socket): connect to each socket
    /// of ours that has no link yet. An unknown socket is refused, and said.
    private func opened(_ paths: [String]) {
        for path in paths {
            guard let socket = sockets.accept(path) else {
                say("not answering for \(VisibleText.of(path)): not replayd's socket (\(sockets.accepted.joined(separator: ", ")))")
                continue
            }
            _ = connect(socket)
        }
    }

    /// Keeps the program while the first questions come in: they follow the registration.
    private func connect(_ socket: String) -> Bool {
        if links[socket] != nil { return true }
        do {
            links[socket] = try AgentLink(socket: socket) { [weak self] event in self?.handle(event, from: socket) }
        } catch {
            say("cannot answer for replayd at \(socket): \(error)")
            return false
        }
        g_application_hold(gtk(application))
        MainLoop.after(1) { [weak self] in
            guard let self else { return }
            g_application_release(gtk(application))
        }
        return true
    }

    private func handle(_ event: AgentLink.Event, from socket: String) {
        switch event {
        case .asked(let prompt):
            guard dialogs[prompt.requestID] == nil, let link = links[socket] else { return }
            let dialog = ConsentDialog(prompt: prompt, application: application) { [weak self] allow in
                link.answer(prompt.requestID, allow: allow)
                self?.dialogs[prompt.requestID] = nil
            }
            dialogs[prompt.requestID] = (dialog, socket)
            dialog.onceShown = { link.watchPreview(prompt.requestID) }
            dialog.present()
        case .preview(let requestID, let thumbnail):
            dialogs[requestID]?.dialog.show(thumbnail)
        case .previewEnded(let requestID, let reason):
            dialogs[requestID]?.dialog.previewEnded(reason: reason)
        case .picker(let offer):
            // An offer of a daemon before 2.4 has no choices: the agent on a terminal shows its page.
            guard let pickerID = offer.pickerID, offer.extensions != nil, pickers[pickerID] == nil else {
                return say("a picker without its choices (replayd before 2.4): open \(offer.pageURL)")
            }
            let window = PickerWindow(offer: offer, pickerID: pickerID, socket: socket, application: application) { [weak self] in
                self?.pickers[pickerID] = nil
            }
            pickers[pickerID] = (window, socket)
            window.present()
        case .pickerClosed(let pickerID):
            pickers[pickerID]?.window.close()
        case .recordingPreview(let offer):
            if let shown = previews[offer.recordingID] { return shown.window.present() }
            let window = PreviewWindow(offer: offer, socket: socket, application: application) { [weak self] in
                self?.previews[offer.recordingID] = nil
            }
            previews[offer.recordingID] = (window, socket)
            window.present()
        case .resolved(let requestID):
            dialogs.removeValue(forKey: requestID)?.dialog.close()
        case .lost(let why):
            say("replayd at \(socket) is gone: \(why)")
            links.removeValue(forKey: socket)?.close()
            for (requestID, entry) in dialogs where entry.socket == socket {
                dialogs[requestID] = nil
                entry.dialog.close()
            }
            for entry in pickers.values where entry.socket == socket { entry.window.close() }
            for entry in previews.values where entry.socket == socket { entry.window.close() }
        }
    }
}

/// A line on standard error (the bus's log when the bus started the program).
func say(_ line: String) {
    StandardStreams.writeError("replay-ui: \(line)\n")
}
