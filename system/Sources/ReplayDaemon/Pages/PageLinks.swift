import FoundationEssentials
import ReplayCaptureModel
import ReplayLoopbackServer
import ReplaySystem
import Synchronization

/// One-time links to a loopback page and the browser sessions they are exchanged for.
///
/// A link's token works once: the page it opens sets a session cookie (HttpOnly,
/// SameSite=Strict, scoped to the page's path) and the token is spent, so a URL that was
/// seen (in `ps`, a terminal's scrollback, the browser's history) no longer opens anything.
/// Links and sessions both expire. Each kind of page keeps its own `PageLinks`, keyed by the
/// page's subject (a consent request, a recording, a picker).
final class PageLinks: Sendable {
    struct Lifetimes: Sendable, Equatable {
        /// How long a link waits to be opened.
        var link: Duration
        /// How long the browser that opened it keeps the page.
        var session: Duration

        /// Both capped by `REPLAYD_PAGE_TOKEN_SECONDS` where it is set: tests make tokens die
        /// in a second or two instead of minutes. It can only shorten them.
        func capped(environment: [String: String] = ProcessInfo.processInfo.environment) -> Lifetimes {
            guard let text = environment[Self.capVariable], let seconds = Double(text), seconds > 0 else { return self }
            let cap = Duration.milliseconds(Int64(seconds * 1000))
            return Lifetimes(link: min(link, cap), session: min(session, cap))
        }

        static let capVariable = "REPLAYD_PAGE_TOKEN_SECONDS"
    }

    private enum Kind {
        case link, session
    }

    private struct Entry {
        let subject: String
        let kind: Kind
        let expires: Int64
    }

    private let lifetimes: Lifetimes
    private let now: @Sendable () -> Int64
    private let entries = Mutex<[String: Entry]>([:])

    /// - Parameter now: the monotonic clock in nanoseconds (a fake one in unit tests).
    init(lifetimes: Lifetimes, now: @escaping @Sendable () -> Int64 = MonotonicClock.nanoseconds) {
        self.lifetimes = lifetimes
        self.now = now
    }

    /// A fresh link token for `subject`; earlier links stay valid until used or expired.
    /// - Parameter lifetime: shorter than the usual link lifetime, when the subject itself ends sooner.
    func issue(for subject: String, lifetime: Duration? = nil) -> String {
        let token = LoopbackServer.randomToken(bytes: 16)
        let expires = now() + min(lifetime ?? lifetimes.link, lifetimes.link).nanoseconds
        entries.withLock { entries in
            removeExpired(&entries)
            entries[token] = Entry(subject: subject, kind: .link, expires: expires)
        }
        return token
    }

    /// Spends the link `token` for `subject`: returns the session value for the cookie, or nil
    /// when the token is unknown, spent, expired or for another subject.
    func redeem(_ token: String, for subject: String) -> String? {
        entries.withLock { entries in
            removeExpired(&entries)
            guard let key = find(token, kind: .link, subject: subject, in: entries) else { return nil }
            entries.removeValue(forKey: key)
            let session = LoopbackServer.randomToken(bytes: 16)
            entries[session] = Entry(subject: subject, kind: .session, expires: now() + lifetimes.session.nanoseconds)
            return session
        }
    }

    /// True when `session` is a live session for `subject`.
    func isSession(_ session: String, for subject: String) -> Bool {
        entries.withLock { entries in
            removeExpired(&entries)
            return find(session, kind: .session, subject: subject, in: entries) != nil
        }
    }

    /// Forgets every link and session of `subject` (its recording was deleted, its request answered).
    func revoke(_ subject: String) {
        entries.withLock { $0 = $0.filter { $0.value.subject != subject } }
    }

    /// Compared in constant time, one by one: how long a lookup takes says nothing of a guess.
    private func find(_ token: String, kind: Kind, subject: String, in entries: [String: Entry]) -> String? {
        var found: String?
        for (key, entry) in entries where LoopbackServer.constantTimeEqual(key, token) {
            if entry.kind == kind && entry.subject == subject { found = key }
        }
        return found
    }

    private func removeExpired(_ entries: inout [String: Entry]) {
        let current = now()
        entries = entries.filter { $0.value.expires > current }
    }
}
