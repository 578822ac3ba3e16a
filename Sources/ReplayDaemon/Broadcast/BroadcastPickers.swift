import Foundation
import ReplayIPC
import Synchronization
import ReplayLoopbackServer

/// Pickers apps asked for, by the token in the picker page's URL. The page is the person's:
/// the app only learns what the person started, through `broadcastUpdated`.
final class BroadcastPickers: Sendable {
    struct Picker: Sendable {
        let host: ClientOutbox
        let hostPeer: PeerIdentity
        let preferredExtension: String?
        let microphone: Bool
        /// The screen, or only the host app's own windows: the app's to ask, the person's to accept.
        let scope: BroadcastScope
    }

    private let pickers = Mutex<[String: Picker]>([:])

    func open(_ picker: Picker) -> String {
        let token = LoopbackServer.randomToken(bytes: 16)
        pickers.withLock { $0[token] = picker }
        return token
    }

    func picker(_ token: String) -> Picker? {
        pickers.withLock { pickers in
            pickers.first { LoopbackServer.constantTimeEqual($0.key, token) }?.value
        }
    }

    /// True while `host` has a picker open (its connection has not closed).
    func isOpen(host: ClientOutbox) -> Bool {
        pickers.withLock { $0.values.contains { $0.host === host } }
    }

    /// Forgets the pickers of a connection that closed.
    func close(host: ClientOutbox) {
        pickers.withLock { $0 = $0.filter { $0.value.host !== host } }
    }
}
