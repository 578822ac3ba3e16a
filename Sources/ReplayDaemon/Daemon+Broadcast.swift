import Foundation
import Logging
import ReplayCapture
import ReplayIPC
import Synchronization

/// Broadcasts: started by the person (CLI) or through an app's picker, one session each.
extension Daemon {
    /// Starts a broadcast through an installed extension; throws a message for the person.
    /// - Parameters:
    ///   - host: the app whose picker started it, which then gets its status on `hostChannel`.
    func startBroadcast(_ request: BroadcastRequest, host: PeerIdentity? = nil,
                        hostChannel: MessageChannel? = nil) throws -> BroadcastStatus {
        guard let info = catalog.find(request.extensionID) else {
            let installed = catalog.list().map(\.manifest.id)
            throw ClientConnection.Refusal(code: .notFound, message: "no extension '\(request.extensionID)' is installed"
                + (installed.isEmpty ? "" : " (installed: \(installed.joined(separator: ", ")))"))
        }
        if let problem = info.manifest.problem(with: request.setup) {
            throw ClientConnection.Refusal(code: .malformedRequest, message: problem)
        }
        let session = BroadcastSession(
            id: "bc-" + ConsentBroker.randomHex(6), request: request, host: host, manifest: info.manifest,
            displayName: configuration.displayName, protectedWindows: protectedWindows, logger: logger)
        guard state.withLock({ state -> Bool in
            guard !state.stopping else { return false }
            state.broadcasts[session.id] = session
            state.latestBroadcast = session.id
            return true
        }) else { throw ClientConnection.Refusal(code: .busy, message: "replayd is shutting down") }
        captureMonitor.begin(.broadcast(session.id))
        Thread.detachNewThread { [self] in
            _ = session.waitUntilFinished()
            captureMonitor.end(.broadcast(session.id))
        }
        if let hostChannel { session.observe { status in try? hostChannel.send(DaemonEvent.broadcastUpdated(status)) } }
        let hidden = [store.directory.path, URL(fileURLWithPath: configuration.socketPath).deletingLastPathComponent().path]
        do {
            try session.start(hidden: hidden, applicationInfo: focusedApplication())
        } catch {
            throw ClientConnection.Refusal(code: .captureFailed, message: "cannot start the broadcast: \(error)")
        }
        return session.status
    }

    /// The broadcast `id` names, or the latest one.
    func broadcast(_ id: String?) -> BroadcastSession? {
        state.withLock { state in (id ?? state.latestBroadcast).flatMap { state.broadcasts[$0] } }
    }

    var broadcastStatuses: [BroadcastStatus] {
        state.withLock { Array($0.broadcasts.values) }.map(\.status).sorted { $0.id < $1.id }
    }

    /// Who is in focus, for `broadcastAnnotated`: the app's executable, from the X server and the kernel.
    private func focusedApplication() -> [String: String] {
        guard let pid = try? windows.focusedProcess(), let executable = configuration.identifier.executable(of: pid) else { return [:] }
        return ["executable": executable, "name": URL(fileURLWithPath: executable).lastPathComponent]
    }
}
