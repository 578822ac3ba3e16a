import ReplayCaptureModel
import Synchronization

/// How many connections replayd holds, per user and in all. Past a cap a new client is
/// told why and closed at once: a flood from one user cannot take the daemon, or the
/// person's own tools, down. The person's tools have their own allowance, outside the apps'
/// total, so `replay status` answers even while apps hold every connection they may.
final class ConnectionLimits: Sendable {
    struct Caps: Sendable {
        var perUser = 256
        var person = 64
        /// Apps' connections, all users together.
        var total = 2048
        /// The loopback pages' connections, every client's together: any local user can open
        /// them, so they get a share of the descriptors of their own that the socket's never gives up.
        var pages = 128
        static let standard = Caps()

        /// Descriptors kept free for everything but apps' connections: recordings, extensions,
        /// the store, logs, the event loop.
        static let reserved = 192

        /// These caps, with the apps' total cut to what `descriptors` (the open-file limit)
        /// leaves once the person's allowance, the pages' share and the reserve are set aside:
        /// past it a client is told "busy" instead of `accept` failing with EMFILE for everyone.
        func fitting(descriptors: Int) -> Caps {
            var caps = self
            caps.pages = max(8, min(pages, descriptors / 8))
            caps.total = max(16, min(total, descriptors - person - caps.pages - Self.reserved))
            return caps
        }
    }

    let caps: Caps
    private let open = Mutex((apps: [UInt32: Int](), person: 0, total: 0))

    init(caps: Caps = .standard) { self.caps = caps }

    /// Takes a place for a client; a sentence for it when there is none.
    func admit(uid: UInt32, isPerson: Bool) -> String? {
        open.withLock { open in
            if isPerson {
                guard open.person < caps.person else {
                    return "at most \(caps.person) connections of the person's own replay tools at once"
                }
                open.person += 1
            } else {
                guard open.total < caps.total else {
                    return "replayd serves at most \(caps.total) app connections at once; try again later"
                }
                guard open.apps[uid, default: 0] < caps.perUser else {
                    return "user \(uid) already has \(caps.perUser) connections open to replayd, the most allowed; close some first"
                }
                open.apps[uid, default: 0] += 1
                open.total += 1
            }
            return nil
        }
    }

    func release(uid: UInt32, isPerson: Bool) {
        open.withLock { open in
            if isPerson {
                open.person -= 1
            } else {
                open.apps[uid, default: 1] -= 1
                open.total -= 1
            }
        }
    }
}
