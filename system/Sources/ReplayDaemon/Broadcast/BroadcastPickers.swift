import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import ReplayCaptureModel
import ReplayIPC
import ReplayLoopbackServer
import Synchronization

/// Pickers apps asked for, by id. The page is the person's, opened with a one-time link only
/// agents see; the app only learns what the person started, through `broadcastUpdated`. A
/// picker starts at most one broadcast, and its page can stop that broadcast and no other.
final class BroadcastPickers: Sendable {
    /// A link waits 10 minutes to be opened; the page it opens lasts 30.
    static let lifetimes = PageLinks.Lifetimes(link: .seconds(600), session: .seconds(1800))

    struct Picker: Sendable {
        let host: ClientOutbox
        let hostPeer: PeerIdentity
        let preferredExtension: String?
        let microphone: Bool
        /// The screen, or only the host app's own windows: the app's to ask, the person's to accept.
        let scope: BroadcastScope
        /// What the app filled in for the preferred extension (never a secret); the person may change it.
        var suggestedSetup: [String: String] = [:]
    }

    /// Where a picker is: choosing, starting its one broadcast, or done with it.
    enum Use: Equatable, Sendable {
        case open
        case starting
        case started(broadcastID: String)
    }

    private struct Entry {
        let picker: Picker
        var use: Use = .open
    }

    private let pickers = Mutex<[String: Entry]>([:])
    let links: PageLinks

    init(links: PageLinks = PageLinks(lifetimes: BroadcastPickers.lifetimes.capped())) {
        self.links = links
    }

    /// Opens a picker: its id (in the page's path) and the one-time link token for its page.
    func open(_ picker: Picker) -> (id: String, token: String) {
        let id = "picker-" + LoopbackServer.randomToken(bytes: 8)
        pickers.withLock { $0[id] = Entry(picker: picker) }
        return (id, links.issue(for: id))
    }

    /// The picker `id`, if `session` is its page's.
    func picker(_ id: String, session: String) -> Picker? {
        guard links.isSession(session, for: id) else { return nil }
        return pickers.withLock { $0[id]?.picker }
    }

    /// Claims the picker's one broadcast; false when it has started one (or is starting it).
    func claimStart(_ id: String) -> Bool {
        pickers.withLock { pickers in
            guard pickers[id]?.use == .open else { return false }
            pickers[id]?.use = .starting
            return true
        }
    }

    /// The claimed start's outcome: the broadcast it started, or nil to let the person try again.
    func finishStart(_ id: String, broadcastID: String?) {
        pickers.withLock { pickers in
            guard pickers[id] != nil else { return }
            pickers[id]?.use = broadcastID.map { .started(broadcastID: $0) } ?? .open
        }
    }

    /// The broadcast the picker started, if any: the only one its page may stop.
    func broadcastID(of id: String) -> String? {
        pickers.withLock { pickers in
            if case .started(let broadcastID)? = pickers[id]?.use { return broadcastID }
            return nil
        }
    }

    /// True while `host` has a picker open (its connection has not closed).
    func isOpen(host: ClientOutbox) -> Bool {
        pickers.withLock { $0.values.contains { $0.picker.host === host } }
    }

    /// The picker `id`, for the person's own tools (consent agents), which need no page session.
    func picker(_ id: String) -> Picker? {
        pickers.withLock { $0[id]?.picker }
    }

    /// Forgets the pickers of a connection that closed, and their pages; returns their ids.
    @discardableResult
    func close(host: ClientOutbox) -> [String] {
        let closed = pickers.withLock { pickers -> [String] in
            let closed = pickers.filter { $0.value.picker.host === host }.map(\.key)
            for id in closed { pickers.removeValue(forKey: id) }
            return closed
        }
        closed.forEach(links.revoke)
        return closed
    }
}

/// What a picker (its page, or the desktop's window through a consent agent) needs of the daemon.
protocol PickerBackend: AnyObject, Sendable {
    var catalog: ExtensionCatalog { get }
    var pickers: BroadcastPickers { get }
    func startBroadcast(_ request: BroadcastRequest, host: PeerIdentity?, hostChannel: ClientOutbox?,
                        started: @escaping @Sendable (Result<BroadcastStatus, DaemonError>) -> Void) throws(DaemonError)
    func broadcast(_ id: String?) -> BroadcastSession?
}

extension PickerBackend {
    /// Starts picker `id`'s one broadcast with what the person chose, for the app that opened
    /// it. The scope stays the app's request; the microphone is on if either asked for it.
    func startPicked(_ id: String, extensionID: String, setup: [String: String], microphone: Bool) async -> Result<BroadcastStatus, DaemonError> {
        guard let picker = pickers.picker(id) else {
            return .failure(DaemonError(code: .notFound, message: "no picker '\(id)' is open (its app may have gone)"))
        }
        guard picker.preferredExtension == nil || picker.preferredExtension == extensionID else {
            return .failure(DaemonError(code: .notPermitted, message: "this picker offers only '\(picker.preferredExtension ?? "")'"))
        }
        // One picker, one broadcast: whoever holds it cannot start more.
        guard pickers.claimStart(id) else {
            return .failure(DaemonError(code: .busy, message: "this picker has already started a broadcast; the app must ask again for another"))
        }
        let request = BroadcastRequest(extensionID: extensionID, setup: setup, microphone: microphone || picker.microphone, scope: picker.scope)
        // Opening the capture and launching the extension block a moment: on a dispatch
        // thread; the wait for the extension to be ready holds none.
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<BroadcastStatus, DaemonError>, Never>) in
            DispatchQueue(label: "picker-start").async {
                do throws(DaemonError) {
                    try self.startBroadcast(request, host: picker.hostPeer, hostChannel: picker.host) { continuation.resume(returning: $0) }
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        pickers.finishStart(id, broadcastID: try? outcome.get().id)
        return outcome
    }

    /// Stops the broadcast picker `id` started, never another; its final state, or nil when none runs.
    func stopPicked(_ id: String) async -> BroadcastStatus? {
        guard let broadcastID = pickers.broadcastID(of: id), let broadcast = broadcast(broadcastID) else { return nil }
        broadcast.stop()
        return await broadcast.finished()
    }
}
