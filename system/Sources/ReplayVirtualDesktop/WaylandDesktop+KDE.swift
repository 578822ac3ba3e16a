import FoundationEssentials
import ReplayDBus
import ReplaySystem

/// KDE Plasma 5.27 (Debian 12): KWin's virtual backend and xdg-desktop-portal-kde.
///
/// What a machine without a GPU can and cannot show of it. KWin 5.27 draws with OpenGL only
/// through GBM, which needs a DRM device; without one it falls back to QPainter. Its screen
/// cast of a monitor is fed by the output's page flip, which only DRM outputs (and GBM
/// outputs of the nested backends) report: on the virtual backend the stream is offered,
/// negotiated and started, and never carries a picture. Its cast of a window renders with
/// OpenGL whatever the compositor draws with, and kwin_wayland 5.27.5 crashes (SIGSEGV) on
/// that cast's first frame under QPainter. So on this desktop the portal, the restore token in
/// KDE's format and the PipeWire negotiation with KWin are real; the pictures are not.
extension WaylandDesktop {
    /// KWin names a screen to restore by its place on the desktop ("0x0" for the only one).
    static let kdeOutput = "0x0"

    func startKDE(_ options: Options, bus: DBusConnection) throws {
        // Debian's kwin_wayland carries the file capability cap_sys_resource (to raise its own
        // limits). Where that capability is not in the bounding set (containers, CI), running
        // it fails with EPERM; a copy has no file capabilities and runs.
        let kwin = directory.appendingPathComponent("kwin_wayland")
        do {
            try FileManager.default.copyItem(atPath: "/usr/bin/kwin_wayland", toPath: kwin.path)
        } catch {
            throw VirtualDesktop.StartError(description: "no /usr/bin/kwin_wayland to run (install kwin-wayland: scripts/install-deps): \(error)")
        }
        try launch("kwin", kwin.path, [
            "--virtual", "--width", String(options.width), "--height", String(options.height), "--socket", waylandDisplay,
            "--no-lockscreen", "--no-global-shortcuts", "--no-kactivities",
        ], environment: [
            // QPainter outright: OpenGL would need GBM, and trying it first only costs time.
            "KWIN_COMPOSE": "Q",
            // What KWin's screen-cast plugin does, in its log (stopped, started, buffers).
            "QT_LOGGING_RULES": "kwin_screencast=true",
        ], removing: ["WAYLAND_DISPLAY", "QT_QPA_PLATFORM"])
        try waitFor("KWin's Wayland socket", socket: waylandDisplay)
        try waitFor("KWin's D-Bus service", name: "org.kde.KWin", on: bus)
        try launch("xdg-desktop-portal-kde", try Self.kdePortalBackend(), [], environment: ["QT_QPA_PLATFORM": "wayland"])
        try waitFor("the KDE portal backend", name: "org.freedesktop.impl.portal.desktop.kde", on: bus)
    }

    /// The KDE portal backend's program, from its D-Bus service file (it lives in an
    /// architecture's libexec folder).
    private static func kdePortalBackend() throws -> String {
        let service = "/usr/share/dbus-1/services/org.freedesktop.impl.portal.desktop.kde.service"
        let text = (try? String(contentsOfFile: service, encoding: .utf8)) ?? ""
        guard let exec = text.split(separator: "\n").first(where: { $0.hasPrefix("Exec=") }) else {
            throw VirtualDesktop.StartError(description: "no \(service): install xdg-desktop-portal-kde (scripts/install-deps)")
        }
        return String(exec.dropFirst("Exec=".count))
    }

    /// What xdg-desktop-portal-kde 5.27 restores `output` from: ("KDE", 1, <bytes>), the
    /// bytes a Qt `QDataStream` of the map {"outputs": [output], "windows": []}.
    static func kdeRestoreData(output: String) -> DBusValue {
        var stream = QtDataStream()
        // A QMap is written with its count, then its last key first.
        stream.uint32(2)
        stream.string("windows")
        stream.variant(type: QtDataStream.stringList) { $0.uint32(0) }
        stream.string("outputs")
        stream.variant(type: QtDataStream.variantList) { list in
            list.uint32(1)
            list.variant(type: QtDataStream.string) { $0.string(output) }
        }
        return .structure([.string("KDE"), .uint32(1), .variant(.array(element: "y", stream.bytes.map(DBusValue.byte)))])
    }

    /// Hand-written seeding to a Qt program: the few `QDataStream` types the KDE portal's
    /// restore data uses, big-endian as Qt writes them.
    struct QtDataStream {
        static let variantList: UInt32 = 9, string: UInt32 = 10, stringList: UInt32 = 11
        private(set) var bytes: [UInt8] = []

        mutating func uint32(_ value: UInt32) { bytes += withUnsafeBytes(of: value.bigEndian, Array.init) }

        /// Its length in bytes, then UTF-16, big-endian.
        mutating func string(_ value: String) {
            let units = Array(value.utf16)
            uint32(UInt32(units.count * 2))
            for unit in units { bytes += withUnsafeBytes(of: unit.bigEndian, Array.init) }
        }

        /// A QVariant: its type, a not-null flag, then the value `write` adds.
        mutating func variant(type: UInt32, _ write: (inout QtDataStream) -> Void) {
            uint32(type)
            bytes.append(0)
            write(&self)
        }
    }
}
