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
}
