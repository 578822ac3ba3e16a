import ArgumentParser
import ExampleWindow
import Foundation
import OpenReplayKit

/// A small call app: it shares its own window into a video call (a Janus VideoRoom room),
/// as the video-call SDKs' screen-share examples do, through the person's broadcast picker.
@main
struct CallShare: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call-share",
        abstract: "Example OpenReplayKit app: shares its own window into a video call.",
        discussion: """
            Opens a window on $DISPLAY and asks replayd to show the person the broadcast \
            picker: the `videoroom` extension preselected, only this app's own windows (the rest \
            of the screen black), and the call's server and room filled in. The person adds the \
            room's pin there (a secret: an app never fills one in) and starts; the usual \
            consent and indicator follow. The broadcast ends after --seconds, when the person \
            stops it, or when the app quits. Each step prints one JSON line.

            Example:
              call-share --server http://127.0.0.1:8088/janus --room 1234 --name "Ana's notes"
            """)

    @Option(help: "The call's Janus server: its HTTP API, e.g. http://127.0.0.1:8088/janus.")
    var server: String

    @Option(help: "The call's VideoRoom room.")
    var room: String

    @Option(help: "Your name in the call (what the others see).")
    var name = "Shared window"

    @Option(help: "Window colour: red, green, blue or RRGGBB.")
    var colour = "green"

    @Option(help: "Window position and size: X,Y,WIDTH,HEIGHT.")
    var geometry = "100,100,480,320"

    @Option(help: "Finish the share this many seconds after it went live (default: when the person stops it).")
    var seconds: Double?

    @Option(help: "replayd's socket (default: as the replay CLI finds it).")
    var socket: String?

    func validate() throws {
        if NoteWindow.geometry(geometry) == nil { throw ValidationError("--geometry must be X,Y,WIDTH,HEIGHT with positive sizes") }
        if NoteWindow.colour(colour) == nil { throw ValidationError("--colour must be red, green, blue or six hex digits") }
        if let seconds, seconds <= 0 { throw ValidationError("--seconds must be positive") }
    }

    func run() async throws {
        guard let frame = NoteWindow.geometry(geometry), let rgb = NoteWindow.colour(colour) else {
            throw ValidationError("invalid --geometry or --colour")
        }
        let window = try NoteWindow(x: frame.x, y: frame.y, width: frame.width, height: frame.height, colour: rgb, title: "Call share")
        window.show("Not shared yet")
        NoteWindow.report(["event": "window", "id": Int(window.id)])
        let controller = BroadcastController(socket: socket)
        let updates = controller.updates()
        do throws(RecordingError) {
            try await controller.showPicker(preferredExtension: "videoroom", scope: .app,
                                            setup: ["url": server, "room": room, "display": name])
        } catch {
            NoteWindow.report(["event": "error", "code": error.code.rawValue, "message": error.message])
            throw ExitCode(3)
        }
        NoteWindow.report(["event": "pickerShown"])
        var finishing = false
        for await status in updates {
            // What the extension says of the call: joining, published, rejoining.
            let call = status.serviceInfo["janus"]
            var fields: [String: Any] = ["event": "broadcast", "state": status.state.rawValue, "scope": status.scope.rawValue]
            if let call { fields["call"] = call }
            if let error = status.lastError { fields["error"] = error }
            NoteWindow.report(fields)
            window.show(call == "published" ? "Shared into room \(room)" : "Sharing: \(status.state.rawValue)")
            if status.isOver { break }
            if status.state == .live, let seconds, !finishing {
                finishing = true
                Task {
                    try? await Task.sleep(for: .seconds(seconds))
                    try? await controller.finish()
                }
            }
        }
    }
}
