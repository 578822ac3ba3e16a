public import ReplayCaptureModel
import ReplayDesktop

/// Which capture backend the daemon's sessions use (`replayd --capture`).
public enum CaptureChoice: Sendable {
    /// The X display (`Configuration.displayName`, else `$DISPLAY`).
    case x11
    /// The ScreenCast portal and PipeWire; the restore tokens live in `tokens`.
    case portal(ScreenCastTokens)

    /// On a Wayland session (`WAYLAND_DISPLAY` set, or `XDG_SESSION_TYPE=wayland`) the portal,
    /// since an X11 grab there sees only XWayland windows; otherwise X11.
    public static func automatic(environment: [String: String], tokens: ScreenCastTokens) -> CaptureChoice {
        waylandSign(environment) != nil ? .portal(tokens) : .x11
    }

    /// Why `automatic` chose what it did, in words for `replay status`.
    public static func automaticReason(environment: [String: String]) -> String {
        waylandSign(environment).map { "a Wayland session: \($0)" } ?? "no Wayland session: WAYLAND_DISPLAY is unset"
    }

    private static func waylandSign(_ environment: [String: String]) -> String? {
        if let display = environment["WAYLAND_DISPLAY"], !display.isEmpty { return "WAYLAND_DISPLAY=\(display)" }
        return environment["XDG_SESSION_TYPE"] == "wayland" ? "XDG_SESSION_TYPE=wayland" : nil
    }

    /// The desktop this choice captures: its sources and hotkeys (the capture itself runs in
    /// capture processes).
    func desktop(displayName: String?) -> any DesktopBackend {
        switch self {
        case .x11: X11Desktop(displayName: displayName)
        case .portal: PortalDesktop()
        }
    }
}
