/// What an extension holds, as the watchdog counts it against its limits.
public struct ExtensionUsage: Sendable, Equatable {
    /// Memory it cannot give back, in bytes, over all its processes and its private storage.
    public var bytes: Int
    /// Processes in its sandbox (counting stops a little past the limit).
    public var processes: Int
    /// Where the bytes are, in words ("anonymous 12 MB, sockets 40 MB…"), for the error that ends it.
    public var breakdown: String?

    public init(bytes: Int, processes: Int, breakdown: String? = nil) {
        self.bytes = bytes
        self.processes = processes
        self.breakdown = breakdown
    }
}
