import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC

/// The wire's words for what the capture backend lists and takes.
extension CaptureSources {
    init(_ listing: SourceListing) {
        let devices = { (list: [AudioDevice]) in
            list.map { AudioDeviceSource(name: $0.name, description: $0.description, isDefault: $0.isDefault) }
        }
        self.init(
            monitors: listing.monitors.map {
                MonitorSource(name: $0.name, x: $0.frame.x, y: $0.frame.y, width: $0.frame.width, height: $0.frame.height,
                              primary: $0.isPrimary)
            },
            windows: listing.windows.map {
                WindowSource(id: $0.id, title: $0.title, application: $0.application, pid: $0.pid,
                             x: $0.frame.x, y: $0.frame.y, width: $0.frame.width, height: $0.frame.height)
            },
            audioOutputs: devices(listing.audioOutputs), audioInputs: devices(listing.audioInputs), notes: listing.notes)
    }
}

extension CaptureArea {
    /// Why the daemon will not take this area, or nil: sizes and waits in reason, names printable.
    var problem: String? {
        switch self {
        case .monitor(let name):
            return name.isEmpty || name.count > 256 || name.unicodeScalars.contains { $0.properties.generalCategory == .control }
                ? "a monitor name must be 1 to 256 printable characters" : nil
        case .window:
            return nil
        case .pickWindow(let seconds):
            return (1...600).contains(seconds) ? nil : "a window pick waits 1 to 600 seconds"
        case .region(let x, let y, let width, let height):
            return (0...32767).contains(x) && (0...32767).contains(y) && (2...32767).contains(width) && (2...32767).contains(height)
                ? nil : "a region's corner must be on the screen and its sides 2 to 32767 pixels"
        }
    }
}
