import Logging
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC

/// In-app capture, capture state and protected windows: what apps do with their own windows.
extension ClientConnection {
    func startCapture(_ options: CaptureOptions) async throws {
        guard (1...60).contains(options.fps) else {
            throw Refusal(code: .malformedRequest, message: "in-app capture runs at 1 to 60 fps")
        }
        guard capture == nil else {
            throw Refusal(code: .outOfOrder, message: "startCapture while this connection is already capturing", closing: true)
        }
        guard let peer else { throw Refusal(code: .captureFailed, message: "the app's process could not be identified") }
        // The person allows what it is: the app's own windows, not the screen (a recording asks again).
        try await awaitConsent(.ownWindows)
        let indicated = "capture-\(peer.pid)-\(number)"
        try daemon.admitCapture(indicated, by: quotaOwner)
        let session = daemon.makeAppCapture(id: indicated, pid: peer.pid, options: options, client: ChannelCaptureClient(channel: channel))
        let daemon = self.daemon
        let size = try await awaitStart({ session.start(then: $0) }, release: { daemon.releaseCapture(indicated) }, abandon: {
            session.stop()
            session.onFinish { daemon.releaseCapture(indicated) }
        })
        try captureStarted(session, indicated: indicated, peer: peer, size: size, fps: options.fps)
    }

    /// The capture runs: the connection owns it, and the indicator and the capture state say so.
    private func captureStarted(_ session: any AppCaptureControl, indicated: String, peer: PeerIdentity,
                                size: (width: Int, height: Int), fps: Int) throws {
        capture = session
        let activity = CaptureMonitor.Activity.appCapture(pid: peer.pid, id: number)
        daemon.captureMonitor.begin(activity)
        let daemon = self.daemon
        daemon.indicator.began(IndicatedCapture(id: indicated, kind: .appCapture, who: capturerName), stop: { session.stop() })
        session.onFinish {
            daemon.releaseCapture(indicated)
            daemon.indicator.ended(indicated)
            daemon.captureMonitor.end(activity)
            daemon.consent.markActive(pid: peer.pid)
        }
        daemon.logger.info("in-app capture started", metadata: ["peer": "\(peerDescription)", "fps": "\(fps)"])
        try channel.send(DaemonEvent.captureStarted(width: size.width, height: size.height, fps: fps))
    }

    func stopCapture() async throws {
        guard let session = capture else {
            throw Refusal(code: .outOfOrder, message: "stopCapture without a capture running on this connection", closing: true)
        }
        session.stop()
        // Its later requests wait for the capture's end, and no thread does. The connection
        // keeps the session until then: nothing else holds it, and its process's end is heard
        // only while it lives.
        await session.finished()
        capture = nil
    }

    func watchCaptureState() throws {
        guard watcherID == nil else {
            throw Refusal(code: .outOfOrder, message: "this connection already watches the capture state", closing: true)
        }
        watcherID = daemon.captureMonitor.watch(channel, pid: peer?.pid ?? -1)
    }

    /// Only a window of the asking process (by the X server's own record of who made it).
    func protectWindow(_ window: UInt32) throws {
        guard let peer else { throw Refusal(code: .notPermitted, message: "the app's process could not be identified") }
        let owner: Int32?, outermost: UInt32
        do {
            owner = try daemon.windows.ownerPID(of: window)
            outermost = try daemon.windows.outermostWindow(of: window, ownedBy: peer.pid)
        } catch {
            throw Refusal(code: .captureFailed, message: "cannot check who owns window \(window): \(error)")
        }
        guard let owner else { throw Refusal(code: .notFound, message: "there is no window \(window) on the display") }
        guard owner == peer.pid else {
            throw Refusal(code: .notPermitted, message: "window \(window) belongs to another process; apps may protect only their own")
        }
        // Capture masks whole application windows: protecting part of one protects all of it.
        daemon.protectedWindows.protect(window, owner: number)
        if outermost != window { daemon.protectedWindows.protect(outermost, owner: number) }
        try channel.send(DaemonEvent.windowProtected(id: window))
    }

    func unprotectWindow(_ window: UInt32) throws {
        daemon.protectedWindows.unprotect(window, owner: number)
        try channel.send(DaemonEvent.windowUnprotected(id: window))
    }
}
