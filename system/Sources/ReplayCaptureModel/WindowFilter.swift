/// Whose windows a capture may show.
public enum WindowFilter: Sendable, Equatable {
    /// The whole screen.
    case everything
    /// In-app capture: only the visible parts of this process's windows, black elsewhere.
    case onlyProcess(Int32)
}
