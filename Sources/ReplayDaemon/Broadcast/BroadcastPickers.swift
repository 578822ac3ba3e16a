import Foundation
import ReplayIPC
import Synchronization

/// Pickers apps asked for, by the token in the picker page's URL. The page is the person's:
/// the app only learns what the person started, through `broadcastUpdated`.
final class BroadcastPickers: Sendable {
    struct Picker: Sendable {
        let host: MessageChannel
        let hostPeer: PeerIdentity
        let preferredExtension: String?
        let microphone: Bool
    }

    private let pickers = Mutex<[String: Picker]>([:])

    func open(_ picker: Picker) -> String {
        let token = ConsentBroker.randomHex(16)
        pickers.withLock { $0[token] = picker }
        return token
    }

    func picker(_ token: String) -> Picker? {
        pickers.withLock { pickers in
            pickers.first { ConsentBroker.constantTimeEqual($0.key, token) }?.value
        }
    }

    /// Forgets the pickers of a connection that closed.
    func close(host: MessageChannel) {
        pickers.withLock { $0 = $0.filter { $0.value.host !== host } }
    }
}
