import ReplayCapture
@testable import ReplayDaemon
import Testing

/// `replayd --capture auto`: the portal on a Wayland session, X11 elsewhere.
@Suite struct CaptureChoiceTests {
    func backendName(_ environment: [String: String]) -> String {
        CaptureChoice.automatic(environment: environment, tokens: ScreenCastTokens()).desktop(displayName: nil).name
    }

    @Test func aWaylandSessionUsesThePortal() {
        #expect(backendName(["WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"]) == "portal")  // XWayland's DISPLAY does not count
        #expect(backendName(["XDG_SESSION_TYPE": "wayland"]) == "portal")
    }

    @Test func anXSessionOrNoneUsesX11() {
        #expect(backendName(["DISPLAY": ":0", "XDG_SESSION_TYPE": "x11"]) == "x11")
        #expect(backendName(["WAYLAND_DISPLAY": ""]) == "x11")
        #expect(backendName([:]) == "x11")
    }

    /// `replay status` says why, naming what it saw.
    @Test func theReasonNamesWhatWasSeen() {
        #expect(CaptureChoice.automaticReason(environment: ["WAYLAND_DISPLAY": "wayland-1"]) == "a Wayland session: WAYLAND_DISPLAY=wayland-1")
        #expect(CaptureChoice.automaticReason(environment: ["XDG_SESSION_TYPE": "wayland"]) == "a Wayland session: XDG_SESSION_TYPE=wayland")
        #expect(CaptureChoice.automaticReason(environment: ["DISPLAY": ":0"]) == "no Wayland session: WAYLAND_DISPLAY is unset")
    }

    /// The X11 probes (the focused window's process, RandR mirroring) run only where X11 captures.
    @Test func theX11ProbesRunOnlyForX11Capture() {
        #expect(Daemon.backgroundWatches(capture: .x11, idleExit: nil) == [.focus, .mirroring, .settling])
        #expect(Daemon.backgroundWatches(capture: .portal(ScreenCastTokens()), idleExit: nil) == [.settling])
        #expect(Daemon.backgroundWatches(capture: .portal(ScreenCastTokens()), idleExit: .seconds(300)) == [.idleness(.seconds(300)), .settling])
    }
}
