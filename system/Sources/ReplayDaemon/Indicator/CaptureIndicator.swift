import ReplayCaptureModel
import ReplayIPC

/// Tells the person that something captures their screen, naming who, and lets them stop it
/// from there. replayd shows one for every recording, in-app capture and broadcast, apps'
/// included; only the person's own tools may ask for none (`replay record --no-notify`).
protocol CaptureIndicator: Sendable {
    /// Whether anybody is told at all, and if not why (for `status` and recordings' warnings).
    var reach: IndicatorStatus { get }
    /// `capture` began; its `controls` act on it when the person asks (from any thread).
    func began(_ capture: IndicatedCapture, controls: IndicatorControls)
    /// The capture with this id was paused or resumed, by whoever did it: its announcement says so.
    func paused(_ id: String, _ paused: Bool)
    /// The capture with this id ended, however it ended.
    func ended(_ id: String)
    /// A short notice about something done without a window to say it (a clip saved by the hotkey).
    func tell(_ notice: IndicatedNotice)
    /// Sends what is queued, then lets the desktop go (replayd is stopping).
    func close() async
}

extension CaptureIndicator {
    func close() async {}

    /// A capture that can only be stopped from its announcement.
    func began(_ capture: IndicatedCapture, stop: @escaping @Sendable () -> Void) {
        began(capture, controls: IndicatorControls(stop: stop))
    }
}

/// What the person can do to a capture from its announcement.
struct IndicatorControls: Sendable {
    let stop: @Sendable () -> Void
    /// Pauses (true) or resumes (false); nil: not from the announcement.
    var setPaused: (@Sendable (Bool) -> Void)?
}

/// A button of a notification: the key the server sends back, and its label.
struct IndicatedAction: Sendable, Equatable {
    let key: String
    let label: String

    static let stop = IndicatedAction(key: "stop", label: "Stop")
    static let pause = IndicatedAction(key: "pause", label: "Pause")
    static let resume = IndicatedAction(key: "resume", label: "Resume")
    /// What a click on the notification itself does (the Notifications spec's "default" key).
    static func click(_ label: String) -> IndicatedAction { IndicatedAction(key: "default", label: label) }
}

/// What the indicator says of one capture.
struct IndicatedCapture: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case recording
        /// Clip buffering: the last minutes kept in memory, saved on request.
        case clipBuffer
        case appCapture
        case broadcast(service: String)
    }

    /// The recording's, broadcast's or capture's id.
    let id: String
    let kind: Kind
    /// Who captures: "the replay command", or an app's name.
    let who: String
    /// Paused now: nothing is captured until it resumes.
    var paused = false

    /// The person's own `replay`, as the indicator names it.
    static let person = "The replay command"

    /// An app by its executable's file name, as the kernel reports the process (not a name
    /// the app sends); a name any program can take, so it tells, it does not prove.
    static func name(ofApp executable: String?) -> String {
        executable.map(Daemon.applicationName(executable:)) ?? "An unknown app"
    }

    /// "Recording the screen", "Broadcasting the screen", "Sharing a window"; "Recording paused".
    var summary: String {
        switch (kind, paused) {
        case (.recording, false): "Recording the screen"
        case (.recording, true): "Recording paused"
        case (.clipBuffer, false): "Keeping the last minutes of the screen"
        case (.clipBuffer, true): "Clip buffering paused"
        case (.appCapture, _): "An app is capturing its windows"
        case (.broadcast, _): "Broadcasting the screen"
        }
    }

    var body: String {
        switch (kind, paused) {
        case (.recording, false): "\(who) is recording your screen."
        case (.recording, true): "\(who) paused recording your screen: nothing is recorded until it resumes."
        case (.clipBuffer, false): "\(who) keeps the last minutes of your screen in memory, to save a clip when asked."
        case (.clipBuffer, true): "\(who) paused keeping the last minutes of your screen: nothing new is kept until it resumes."
        case (.appCapture, _): "\(who) is capturing its own windows."
        case (.broadcast(let service), _): "\(who) is broadcasting your screen to \(service)."
        }
    }

    /// Pause or Resume (when it can be paused from here) and Stop; a click stops it.
    func actions(pausable: Bool) -> [IndicatedAction] {
        (pausable ? [paused ? .resume : .pause] : []) + [.stop, .click("Stop")]
    }

    var endedSummary: String {
        switch kind {
        case .recording: "Screen recording ended"
        case .clipBuffer: "Clip buffering ended"
        case .appCapture: "Window capture ended"
        case .broadcast: "Broadcast ended"
        }
    }
}

/// A short notice that is no capture: it goes away by itself, and may offer one action.
struct IndicatedNotice: Sendable {
    /// The action a button (and a click) runs.
    struct Action: Sendable {
        let label: String
        let run: @Sendable () -> Void
    }

    let summary: String
    let body: String
    let action: Action?

    /// "Saved the last 30 s": the clip's real length, to the second.
    static func clipSaved(_ clip: ClipSaved, open: Action?) -> IndicatedNotice {
        IndicatedNotice(summary: "Saved the last \(max(1, Int(clip.duration.rounded()))) s",
                        body: "The clip is in your recordings as \(clip.id).", action: open)
    }

    var actions: [IndicatedAction] {
        action.map { [IndicatedAction(key: "open", label: $0.label), .click($0.label)] } ?? []
    }
}

/// No indicator: no session bus (a server), no notification server, or the daemon was told so.
struct NoCaptureIndicator: CaptureIndicator {
    let reason: String

    var reach: IndicatorStatus { IndicatorStatus(kind: .none, reason: reason) }
    func began(_ capture: IndicatedCapture, controls: IndicatorControls) {}
    func paused(_ id: String, _ paused: Bool) {}
    func ended(_ id: String) {}
    func tell(_ notice: IndicatedNotice) {}
}
