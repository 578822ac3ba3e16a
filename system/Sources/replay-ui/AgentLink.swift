import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import ReplaySystem
import ReplayIPC
import ReplayUIModel
import Synchronization

/// The dialog's connection to one replayd: a consent agent, as `replay consent-agent` is. The
/// daemon trusts it as the person's own tool (the installed file, unmodified, run by the
/// person: docs/security.md); it hands it every question, and takes its answers.
///
/// Events are read on a thread of their own and handed to the main loop, where every window
/// lives.
final class AgentLink: Sendable {
    enum Event: Sendable {
        case asked(ConsentPrompt)
        /// A picture of what the app asking would receive, made small here (off the main loop).
        case preview(requestID: String, Thumbnail)
        /// No more pictures for the question; `reason` when there were none to give.
        case previewEnded(requestID: String, reason: String?)
        /// Answered (here or elsewhere), timed out, or withdrawn: its dialog goes.
        case resolved(requestID: String)
        /// An app asks the person to pick a broadcast service (an offer with its choices).
        case picker(PickerOffer)
        /// The app that opened a picker has gone.
        case pickerClosed(pickerID: String)
        /// An app asks the person to look at a recording it made.
        case recordingPreview(PreviewOffer)
        /// The daemon is gone (or never welcomed us): every dialog of it goes.
        case lost(String)
    }

    let socket: String
    private let channel: MessageChannel

    /// Connects and registers; `events` runs on the main loop for each event, in order.
    init(socket: String, events: @escaping @Sendable (Event) -> Void) throws {
        self.socket = socket
        // Only our own uid's replayd, or the system's (`MessageChannel` checks its credentials).
        channel = try MessageChannel.connect(path: socket, client: "replay-ui")
        try channel.send(ClientRequest.registerConsentAgent)
        guard let reply = try channel.receive(DaemonEvent.self) else {
            throw LinkError(description: "replayd closed the connection")
        }
        switch reply.message {
        case .consentAgentRegistered: break
        case .error(_, let message): throw LinkError(description: message)
        default: throw LinkError(description: "unexpected reply from replayd")
        }
        let channel = self.channel
        Threads.detach {
            while true {
                let event: DaemonEvent, body: [UInt8]
                do {
                    guard let received = try channel.receive(DaemonEvent.self) else {
                        MainLoop.post { events(.lost("replayd closed the connection")) }
                        return
                    }
                    (event, body) = received
                } catch {
                    MainLoop.post { events(.lost("\(error)")) }
                    return
                }
                switch event {
                case .consentRequested(let prompt): MainLoop.post { events(.asked(prompt)) }
                case .consentResolved(let requestID, _): MainLoop.post { events(.resolved(requestID: requestID)) }
                case .consentPreviewFrame(let requestID, let frame):
                    let thumbnail = body.withUnsafeBytes {
                        Thumbnail(i420: $0, width: frame.width, height: frame.height, fitting: AgentLink.thumbnailBox)
                    }
                    if let thumbnail { MainLoop.post { events(.preview(requestID: requestID, thumbnail)) } }
                case .consentPreviewEnded(let requestID, let reason):
                    MainLoop.post { events(.previewEnded(requestID: requestID, reason: reason)) }
                case .pickerOffered(let offer): MainLoop.post { events(.picker(offer)) }
                case .pickerClosed(let pickerID): MainLoop.post { events(.pickerClosed(pickerID: pickerID)) }
                case .previewOffered(let offer): MainLoop.post { events(.recordingPreview(offer)) }
                default: break
                }
            }
        }
    }

    /// The largest thumbnail a dialog shows.
    static let thumbnailBox = (width: 360, height: 220)

    /// Asks for a live picture of what the app asking `requestID` would receive.
    func watchPreview(_ requestID: String) {
        try? channel.send(ClientRequest.watchConsentPreview(requestID: requestID))
    }

    func answer(_ requestID: String, allow: Bool) {
        try? channel.send(ClientRequest.answerConsent(requestID: requestID, allow: allow))
    }

    func close() { channel.close() }

    struct LinkError: Error, CustomStringConvertible {
        let description: String
    }
}
