import FoundationEssentials
import ReplaySystem
import ReplayCaptureModel

/// What one app, and all apps together, may capture at once: one consent let an app start
/// 40 recordings (replayd 142 → 412 MB) and clip buffers of 4 GiB each. Recordings, clip
/// buffers and in-app captures count; the person's own captures are counted apart, so apps
/// that fill their share never keep the person from recording.
struct CaptureQuota {
    /// Who holds a capture: an app is its user and its executable, so one program's many
    /// connections (or processes) share one allowance.
    enum Owner: Hashable, CustomStringConvertible {
        case person
        case app(uid: UInt32, executable: String)

        var description: String {
            switch self {
            case .person: "the person"
            case .app(let uid, let executable): "\(executable) (uid \(uid))"
            }
        }
    }

    static let perApp = 4
    static let appsInAll = 16
    static let personInAll = 16

    /// All clip buffers' memory budgets together: a quarter of the machine's memory.
    let clipBytesInAll: Int

    private var held: [String: (owner: Owner, clipBytes: Int, diskBytes: Int64)] = [:]

    /// The disk budgets of the clip buffers that spill, together.
    var diskBytesReserved: Int64 { held.values.reduce(0) { $0 + $1.diskBytes } }

    init(physicalMemory: Int) {
        clipBytesInAll = max(physicalMemory / 4, 1 << 20)
    }

    /// Takes a place for capture `id`, or says why there is none.
    ///
    /// A clip buffer that spills asks `diskBytes` of the store's disk too: all such budgets
    /// together stay within half of what `freeDisk` says is free now (a buffer's bytes on
    /// disk are counted twice, in its budget and as space no longer free: a bound, not a fit).
    mutating func admit(_ id: String, owner: Owner, clipBytes: Int = 0, diskBytes: Int64 = 0, freeDisk: Int64? = nil) -> String? {
        let isApp = owner != .person
        let same = held.values.filter { $0.owner == owner }.count
        let sameKind = held.values.filter { ($0.owner != .person) == isApp }.count
        if isApp && same >= Self.perApp {
            return "\(owner) already runs \(Self.perApp) captures (recordings, clip buffers, in-app captures); stop one first"
        }
        if sameKind >= (isApp ? Self.appsInAll : Self.personInAll) {
            return isApp ? "apps already run \(Self.appsInAll) captures in all; try again once one ends"
                : "the person already runs \(Self.personInAll) captures; stop one first"
        }
        let clipBytes = max(clipBytes, 0)
        let reserved = held.values.reduce(0) { $0 + $1.clipBytes }
        if clipBytes > 0 && reserved + clipBytes > clipBytesInAll {
            return String(printf: "clip buffers may hold %.1f GiB in all (a quarter of this machine's memory); %.1f GiB are taken "
                + "and this one asks %.1f GiB: ask for a smaller budget, or stop another clip buffer",
                Double(clipBytesInAll) / Double(1 << 30), Double(reserved) / Double(1 << 30), Double(clipBytes) / Double(1 << 30))
        }
        if diskBytes > 0, let freeDisk, diskBytesReserved + diskBytes > freeDisk / 2 {
            return String(printf: "clip buffers kept on disk may reserve half of the store's free space, %.1f GiB; %.1f GiB are "
                + "reserved and this one asks %.1f GiB: ask for a smaller budget (--budget), or stop another clip buffer",
                Double(freeDisk / 2) / Double(1 << 30), Double(diskBytesReserved) / Double(1 << 30), Double(diskBytes) / Double(1 << 30))
        }
        held[id] = (owner, clipBytes, diskBytes)
        return nil
    }

    mutating func release(_ id: String) {
        held[id] = nil
    }
}
