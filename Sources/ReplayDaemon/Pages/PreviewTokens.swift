import Synchronization
import ReplayLoopbackServer

/// Per-recording tokens for the preview page. A token is handed to the person (the CLI, a
/// consent agent) and never to an app, so an app that knows a recording's id still cannot
/// watch, save or delete it.
final class PreviewTokens: Sendable {
    private let tokens = Mutex<[String: String]>([:])

    /// The recording's token, made on first use.
    func token(for recordingID: String) -> String {
        tokens.withLock { tokens in
            if let token = tokens[recordingID] { return token }
            let token = LoopbackServer.randomToken(bytes: 16)
            tokens[recordingID] = token
            return token
        }
    }

    func isValid(_ token: String, for recordingID: String) -> Bool {
        guard let expected = tokens.withLock({ $0[recordingID] }) else { return false }
        return LoopbackServer.constantTimeEqual(token, expected)
    }

    func revoke(_ recordingID: String) {
        _ = tokens.withLock { $0.removeValue(forKey: recordingID) }
    }
}
