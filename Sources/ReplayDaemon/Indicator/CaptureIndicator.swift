/// Tells the person that something captures their screen, naming who, and lets them stop it
/// from there. replayd shows one for every recording, in-app capture and broadcast, apps'
/// included; only the person's own tools may ask for none (`replay record --no-notify`).
protocol CaptureIndicator: Sendable {
    /// `capture` began; `stop` ends it if the person asks (it may be called from any thread).
    func began(_ capture: IndicatedCapture, stop: @escaping @Sendable () -> Void)
    /// The capture with this id ended, however it ended.
    func ended(_ id: String)
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

    /// The person's own `replay`, as the indicator names it.
    static let person = "The replay command"

    /// An app by its executable's file name, as the kernel reports the process (not a name
    /// the app sends); a name any program can take, so it tells, it does not prove.
    static func name(ofApp executable: String?) -> String {
        executable.map(Daemon.applicationName(executable:)) ?? "An unknown app"
    }

    /// "Recording the screen", "Broadcasting the screen", "Sharing a window".
    var summary: String {
        switch kind {
        case .recording: "Recording the screen"
        case .clipBuffer: "Keeping the last minutes of the screen"
        case .appCapture: "An app is capturing its windows"
        case .broadcast: "Broadcasting the screen"
        }
    }

    var body: String {
        switch kind {
        case .recording: "\(who) is recording your screen."
        case .clipBuffer: "\(who) keeps the last minutes of your screen in memory, to save a clip when asked."
        case .appCapture: "\(who) is capturing its own windows."
        case .broadcast(let service): "\(who) is broadcasting your screen to \(service)."
        }
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

/// No indicator: no session bus (a server), or the daemon was told so.
struct NoCaptureIndicator: CaptureIndicator {
    func began(_ capture: IndicatedCapture, stop: @escaping @Sendable () -> Void) {}
    func ended(_ id: String) {}
}
