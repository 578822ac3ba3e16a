public import ReplayIPC

/// What the consent dialog says, from the request: the app as the desktop names it (with the
/// executable the kernel reports beside it, since any program may take a name), and each thing
/// it would capture on a line of its own. Control characters are shown, never obeyed.
public struct ConsentWording: Sendable, Equatable {
    public let title: String
    public let heading: String
    /// The executable, process and user: what identifies the app for sure.
    public let identity: String
    public let captured: [String]
    /// Above the live picture of what the app would receive, and its name for a screen reader.
    public let previewCaption: String
    /// The app's icon, for a screen reader.
    public let iconLabel: String

    public init(_ prompt: ConsentPrompt) {
        let name = VisibleText.of(prompt.appName ?? Self.fileName(prompt.executable))
        let ownWindows = prompt.ownWindowsOnly == true
        title = ownWindows ? "Share an app's windows?" : "Allow screen recording?"
        heading = ownWindows ? "\(name) wants to see its own windows" : "\(name) wants to record your screen"
        identity = "\(VisibleText.of(prompt.executable)) · process \(prompt.pid) · user \(prompt.uid)"
        var captured: [String] = []
        if prompt.screen {
            captured.append(ownWindows ? "Its own windows (everything else is black)" : "Everything on your screen")
        }
        if prompt.appAudio { captured.append("Sound your apps play") }
        if prompt.microphone { captured.append("Your microphone") }
        if prompt.camera == true { captured.append("Your camera") }
        self.captured = captured
        iconLabel = "Icon of \(name)"
        previewCaption = ownWindows ? "What it would see now (the rest stays black):" : "What it would record now:"
    }

    private static func fileName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
