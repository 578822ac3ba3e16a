/// The limits replayd holds an upload extension to, and the words it ends a broadcast with
/// when one is crossed: one place for the daemon's watchdog and `ReplayExtensionTesting`'s
/// harness, which simulates them.
public enum BroadcastLimits {
    /// Memory the extension's sandbox may hold and not give back: 50 MiB.
    public static let memory = 50 * 1024 * 1024
    /// Processes the sandbox may run.
    public static let processes = 64
    /// How often replayd pings the extension, in seconds.
    public static let heartbeatInterval = 1.0
    /// How long an unanswered ping may wait, in seconds, before the extension is taken as hung.
    public static let heartbeatTimeout = 5.0

    /// `bytes` in mebibytes to a tenth: 54,386,688 bytes is "51.9 MiB", the limit "50 MiB".
    public static func mebibytes(_ bytes: Int) -> String {
        let tenths = (bytes * 10 + (1 << 19)) >> 20  // rounded to the nearest tenth
        return tenths % 10 == 0 ? "\(tenths / 10) MiB" : "\(tenths / 10).\(tenths % 10) MiB"
    }

    /// Why a broadcast failed when `extensionID` held `bytes` (over `memory`); `breakdown`
    /// says where they were ("anonymous 40.0 MiB, memfds 11.9 MiB in 2 processes").
    public static func memoryFailure(extensionID: String, bytes: Int, breakdown: String? = nil) -> String {
        "the extension '\(extensionID)' used more than \(mebibytes(memory)) of memory "
            + "(\(mebibytes(bytes))\(breakdown.map { ": " + $0 } ?? "")) and was stopped"
    }

    /// Why a broadcast failed when the extension left pings unanswered for `timeout` seconds.
    public static func hangFailure(timeout: Double = heartbeatTimeout) -> String {
        "the extension stopped responding (no heartbeat for \(formatted(timeout)) s) and was stopped"
    }

    /// Why a broadcast failed when the extension ran more than `processes` processes.
    public static func processFailure(extensionID: String) -> String {
        "the extension '\(extensionID)' ran more than \(processes) processes and was stopped"
    }

    /// 5 as "5", 0.25 as "0.25": no Foundation here.
    private static func formatted(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : String(seconds)
    }
}
