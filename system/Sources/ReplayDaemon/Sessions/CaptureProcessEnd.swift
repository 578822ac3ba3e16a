/// When a capture process's session ends: once every report has been read (its channel has
/// closed) and the process has been reaped, in either order, so the session knows everything
/// the process said and how it ended; never while the end is held (a recording's start, not yet
/// answered, reports a process that ends meanwhile itself); and once. Kept under its session's
/// lock, beside what that lock guards.
struct CaptureProcessEnd {
    private(set) var channelClosed = false
    /// The process's status once reaped.
    private(set) var exitStatus: Int32?
    private(set) var isOver = false
    /// While true, the end waits even when both have happened.
    var held: Bool

    init(held: Bool = false) {
        self.held = held
    }

    /// Notes what happened (nothing: only a release of `held`); returns the exit status the
    /// one time the end has come.
    mutating func note(channelClosed: Bool = false, exitStatus: Int32? = nil) -> Int32? {
        guard !isOver else { return nil }
        if channelClosed { self.channelClosed = true }
        if let exitStatus { self.exitStatus = exitStatus }
        guard self.channelClosed, let status = self.exitStatus, !held else { return nil }
        isOver = true
        return status
    }
}
