package import ReplayIPC
import ReplayMedia

extension ScreenArea {
    /// nil (no area in the request) is the whole screen.
    package init(_ area: CaptureArea?) {
        switch area {
        case nil: self = .screen
        case .monitor(let name): self = .monitor(name)
        case .window(let id): self = .window(id)
        case .pickWindow(let seconds): self = .pickWindow(timeout: Double(seconds))
        case .region(let x, let y, let width, let height): self = .region(PixelRect(x: x, y: y, width: width, height: height))
        }
    }
}
