/// What an extension holds, as the watchdog counts it against its limits.
public struct ExtensionUsage: Sendable, Equatable {
    /// Memory it cannot give back, in bytes, over all its processes and its private storage.
    public var bytes: Int
    /// Processes in its sandbox (counting stops a little past the limit).
    public var processes: Int

    public init(bytes: Int, processes: Int) {
        self.bytes = bytes
        self.processes = processes
    }
}
