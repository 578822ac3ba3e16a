/// What the desktop's dialog offers the person: a monitor or a window (`SelectSources`'
/// `types`). A restore token is for one kind of choice.
public enum ScreenCastSource: UInt32, Sendable {
    case monitor = 1
    case window = 2

    /// What the dialog is asked for to capture `area`: a window for a window pick (the
    /// compositor then follows it), else the monitor.
    public init(for area: ScreenArea) {
        self = if case .pickWindow = area { .window } else { .monitor }
    }
}
