import Synchronization

/// How many connections replayd holds, per user and in all. Past a cap a new client is
/// told why and closed at once: a flood from one user cannot take the daemon, or the
/// person's own tools, down. The person's tools have their own allowance, so `replay
/// status` answers even while an app of theirs holds every connection it may.
final class ConnectionLimits: Sendable {
    struct Caps: Sendable {
        var perUser = 256
        var person = 64
        var total = 2048
        static let standard = Caps()
    }

    let caps: Caps
    private let open = Mutex((apps: [UInt32: Int](), person: 0, total: 0))

    init(caps: Caps = .standard) { self.caps = caps }

    /// Takes a place for a client; a sentence for it when there is none.
    func admit(uid: UInt32, isPerson: Bool) -> String? {
        open.withLock { open in
            guard open.total < caps.total else {
                return "replayd serves at most \(caps.total) connections at once; try again later"
            }
            if isPerson {
                guard open.person < caps.person else {
                    return "at most \(caps.person) connections of the person's own replay tools at once"
                }
                open.person += 1
            } else {
                guard open.apps[uid, default: 0] < caps.perUser else {
                    return "user \(uid) already has \(caps.perUser) connections open to replayd, the most allowed; close some first"
                }
                open.apps[uid, default: 0] += 1
            }
            open.total += 1
            return nil
        }
    }

    func release(uid: UInt32, isPerson: Bool) {
        open.withLock { open in
            if isPerson { open.person -= 1 } else { open.apps[uid, default: 1] -= 1 }
            open.total -= 1
        }
    }
}
