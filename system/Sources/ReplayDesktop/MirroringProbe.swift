import CXCB
public import ReplayCaptureModel
#if canImport(Glibc)
import Glibc
#endif

/// Tells whether the screen is mirrored to a second display, from RandR: one CRTC driving
/// several outputs (clone mode), or two active CRTCs showing the same part of the screen.
/// Either way what is on the screen is being shown somewhere else too.
public final class MirroringProbe {
    private let display: X11Display

    public init(displayName: String?) throws(CaptureError) {
        display = try X11Display(name: displayName)
    }

    /// One active CRTC: the part of the screen it scans out and how many outputs show it.
    public struct Scanout: Equatable, Sendable {
        public let area: PixelRect
        public let outputs: Int
        public init(area: PixelRect, outputs: Int) {
            self.area = area
            self.outputs = outputs
        }
    }

    public static func isMirrored(_ scanouts: [Scanout]) -> Bool {
        let active = scanouts.filter { $0.outputs > 0 && !$0.area.isEmpty }
        if active.contains(where: { $0.outputs > 1 }) { return true }
        for (index, first) in active.enumerated() where active[(index + 1)...].contains(where: { $0.area == first.area }) {
            return true
        }
        return false
    }

    /// Asks the server now; false when it cannot tell (the question is asked again later).
    public func isMirroring() throws(CaptureError) -> Bool {
        try display.checkConnection()
        return Self.isMirrored(scanouts())
    }

    private func scanouts() -> [Scanout] {
        let connection = display.connection
        let cookie = xcb_randr_get_screen_resources_current(connection, display.root)
        guard let resources = xcb_randr_get_screen_resources_current_reply(connection, cookie, nil) else { return [] }
        defer { free(resources) }
        guard let crtcs = xcb_randr_get_screen_resources_current_crtcs(resources) else { return [] }
        let count = Int(xcb_randr_get_screen_resources_current_crtcs_length(resources))
        let timestamp = resources.pointee.config_timestamp
        // All requests out before the first reply is read: one round trip for every CRTC.
        let cookies = (0..<count).map { xcb_randr_get_crtc_info(connection, crtcs[$0], timestamp) }
        return cookies.compactMap { cookie -> Scanout? in
            guard let info = xcb_randr_get_crtc_info_reply(connection, cookie, nil) else { return nil }
            defer { free(info) }
            let crtc = info.pointee
            guard crtc.mode != 0 else { return nil }
            return Scanout(area: PixelRect(x: Int(crtc.x), y: Int(crtc.y), width: Int(crtc.width), height: Int(crtc.height)),
                           outputs: Int(crtc.num_outputs))
        }
    }
}
