public import ReplayCaptureModel
import ReplayMedia

/// What the control daemon asks of the desktop itself, without capturing anything: what can
/// be recorded, and a global hotkey. It links no capture library (replayd uses it);
/// `CaptureBackend` adds the capture, which runs in capture processes.
public protocol DesktopBackend: Sendable {
    /// Names the backend in status and logs ("x11").
    var name: String { get }
    /// What can be recorded now; what cannot be listed is said in its notes, never thrown.
    func listSources() -> SourceListing
    /// Calls `onPress` whenever `chord` is pressed anywhere on the desktop, until the result
    /// is released; throws `hotkeyUnavailable` when the desktop cannot give it.
    func grabHotkey(_ chord: KeyChord, onPress: @escaping @Sendable () -> Void) throws(CaptureError) -> any HotkeyRelease
}

/// The X11 display's monitors and windows, and its key grabs.
public struct X11Desktop: DesktopBackend {
    public let displayName: String?
    public var name: String { "x11" }

    /// nil: `$DISPLAY` when asked.
    public init(displayName: String?) { self.displayName = displayName }

    public func grabHotkey(_ chord: KeyChord, onPress: @escaping @Sendable () -> Void) throws(CaptureError) -> any HotkeyRelease {
        try HotkeyGrab(chord, displayName: displayName, onPress: onPress)
    }

    public func listSources() -> SourceListing {
        var listing = SourceListing()
        do {
            let display = try X11Display(name: displayName)
            listing.monitors = display.monitors()
            let stack = try WindowStack(display: display)
            let windows = stack.windows()
            listing.windows = zip(windows, stack.names(of: windows)).map { window, names in
                WindowListing(id: window.clientWindow, title: names.title, application: names.application,
                              pid: window.ownerPID, frame: window.frame)
            }
        } catch {
            listing.notes.append("monitors and windows: \(error.description)")
        }
        listing.addAudioDevices()
        return listing
    }
}

/// A Wayland desktop reached through the ScreenCast portal: its dialog is the only way to see
/// what is on the screen, and it has no global hotkey here.
public struct PortalDesktop: DesktopBackend {
    public var name: String { "portal" }

    public init() {}

    /// Global shortcuts on Wayland go through the GlobalShortcuts portal: xdg-desktop-portal
    /// 1.16 (Debian 12) has its front, but GNOME 43's backend does not implement it (KDE
    /// Plasma 5.27's does), so it could not be built and tested here.
    public func grabHotkey(_ chord: KeyChord, onPress: @escaping @Sendable () -> Void) throws(CaptureError) -> any HotkeyRelease {
        throw CaptureError(.hotkeyUnavailable, "no global hotkey on Wayland here: it needs the GlobalShortcuts portal, which "
            + "GNOME 43 does not implement; bind a desktop keyboard shortcut to `replay clip save` instead")
    }

    public func listSources() -> SourceListing {
        var listing = SourceListing()
        listing.notes.append("monitors and windows: the desktop's ScreenCast dialog chooses them; a Wayland compositor tells "
            + "no other program what is on the screen")
        listing.addAudioDevices()
        return listing
    }
}

/// Something held until it is released: a grabbed hotkey.
public protocol HotkeyRelease: AnyObject, Sendable {
    func release()
}

extension HotkeyGrab: HotkeyRelease {}

/// The monitors, windows and audio devices a capture can be made of.
public struct SourceListing: Sendable {
    public var monitors: [MonitorListing] = []
    /// Bottom to top.
    public var windows: [WindowListing] = []
    public var audioOutputs: [AudioDevice] = []
    public var audioInputs: [AudioDevice] = []
    /// What could not be listed, and why.
    public var notes: [String] = []

    public init() {}

    /// The audio server's outputs and inputs, or a note saying why there are none.
    mutating func addAudioDevices() {
        do {
            (audioOutputs, audioInputs) = try PulseServer.devices()
        } catch {
            notes.append("audio devices: \(error.description)")
        }
    }
}

public struct MonitorListing: Sendable, Equatable {
    public let name: String
    public let frame: PixelRect
    public let isPrimary: Bool
}

public struct WindowListing: Sendable, Equatable {
    /// The application's window, which `ScreenArea.window` takes.
    public let id: UInt32
    public let title: String
    public let application: String
    public let pid: Int32?
    public let frame: PixelRect
}

public struct AudioDevice: Sendable, Equatable {
    public let name: String
    public let description: String
    public let isDefault: Bool
}
