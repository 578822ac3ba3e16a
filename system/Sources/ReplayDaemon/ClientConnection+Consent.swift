import Logging
import ReplayCaptureModel
import ReplayIPC

/// Consent agents: the person's own tools that answer apps' requests to capture.
extension ClientConnection {
    func registerAgent() throws {
        try requirePerson("answer consent requests")
        guard agentID == nil else {
            throw Refusal(code: .outOfOrder, message: "this connection is already a consent agent", closing: true)
        }
        // Tells it so, then hands it the questions already waiting.
        agentID = daemon.consent.addAgent(channel)
        daemon.logger.info("consent agent registered", metadata: ["peer": "\(peerDescription)"])
    }

    func answerConsent(requestID: String, allow: Bool) throws {
        guard agentID != nil else {
            throw Refusal(code: .outOfOrder, message: "answerConsent from a connection that is not a consent agent", closing: true)
        }
        guard daemon.consent.answer(requestID: requestID, allow: allow, session: nil) else {
            throw Refusal(code: .notFound, message: "no pending consent request '\(requestID)'")
        }
    }

    /// A live picture of what the asking app would receive, for the dialog: its own windows
    /// (an in-app capture's question) or the screen, protected windows black in both, two a
    /// second, from a capture process of its own, until the question ends or this agent leaves.
    /// Shown to the person only: the app is not told, and no capture of it is announced.
    func watchConsentPreview(requestID: String) throws {
        guard agentID != nil else {
            throw Refusal(code: .outOfOrder, message: "watchConsentPreview from a connection that is not a consent agent", closing: true)
        }
        guard let prompt = daemon.consent.waitingPrompt(requestID) else {
            throw Refusal(code: .notFound, message: "no pending consent request '\(requestID)'")
        }
        guard consentPreviews[requestID] == nil else { return }
        if case .portal = daemon.configuration.capture {
            // The portal says nothing of where windows are, and would ask the person for the screen first.
            try channel.send(DaemonEvent.consentPreviewEnded(
                requestID: requestID, reason: "no preview through the desktop's ScreenCast portal"))
            return
        }
        let channel = self.channel
        let session = daemon.makeAppCapture(
            id: "consent-preview-\(number)-\(consentPreviews.count)", pid: prompt.pid, options: CaptureOptions(fps: 2),
            client: ConsentPreviewClient(channel: channel, requestID: requestID), wholeScreen: prompt.ownWindowsOnly != true)
        consentPreviews[requestID] = session
        session.start { result in
            if case .failure(let error) = result {
                try? channel.send(DaemonEvent.consentPreviewEnded(requestID: requestID, reason: error.message))
            }
        }
        if !daemon.consent.whenResolved(requestID, { session.stop() }) { session.stop() }
    }
}

/// A consent dialog as a capture's client: each picture goes to the agent tagged with its
/// question, while fewer than two wait for it to read them (as `ChannelCaptureClient`).
struct ConsentPreviewClient: CaptureClient {
    let channel: ClientOutbox
    let requestID: String

    func deliver(_ info: CapturedFrameInfo, pixels: UnsafeRawBufferPointer) -> CaptureDelivery {
        guard !channel.isClosed else { return .gone }
        guard channel.hasRoom(below: pixels.count * 2) else { return .busy }
        return (try? channel.sendBulk(DaemonEvent.consentPreviewFrame(requestID: requestID, frame: info), body: pixels)) != nil ? .sent : .gone
    }

    func captureStopped(error: String?) {
        try? channel.send(DaemonEvent.consentPreviewEnded(requestID: requestID, reason: error))
    }
}
