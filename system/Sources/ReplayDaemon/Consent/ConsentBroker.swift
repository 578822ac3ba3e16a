import FoundationEssentials
import Dispatch
public import ReplayCaptureModel
import ReplayIPC
import ReplayLoopbackServer
import ReplayMedia
public import ReplaySystem
import Synchronization

/// Decides whether an app may capture, asking the person out of the app's process.
///
/// Consent is per client process (pid and start time, from the kernel), lasts for that
/// process's life, and is asked again once the app has gone `idleLimit` (8 minutes, as in
/// ReplayKit) without focus or capture. The question goes to every registered consent agent
/// (the desktop's dialog `replay-ui`, the terminal agent, or whoever opens the loopback page
/// whose URL only agents see); the first answer wins. With no agent registered, the desktop's
/// dialog is summoned (`ConsentDialogs`) and handed the question once it registers. A policy
/// file can answer for unattended machines.
public final class ConsentBroker: Sendable {
    public struct Settings: Sendable {
        public var policy: ConsentPolicy
        /// How long an app waits for an answer before it counts as declined.
        public var timeout: Duration
        /// Consent lapses after this long without focus or capture.
        public var idleLimit: Duration
        /// What idleness is measured on (a test's manual clock).
        public var clock: any SessionClock = MonotonicSessionClock()
        /// What an unanswered request's timeout waits on (a test's manual timers).
        public var timers: any Timers = DispatchTimers()

        public init(policy: ConsentPolicy = .askEveryone, timeout: Duration = .seconds(120), idleLimit: Duration = .seconds(480)) {
            self.policy = policy
            self.timeout = timeout
            self.idleLimit = idleLimit
        }
    }

    enum Decision: Equatable {
        case allowed
        case declined(String)
        /// Too many prompts are already waiting for the person: ask again later.
        case tooManyPending(String)
    }

    /// Prompts waiting for the person at once: from one user's apps, and from everyone's. A
    /// person answers one at a time; an app that asks a hundred times only floods them.
    static let pendingPerUser = 4
    static let pendingInAll = 16

    struct Capabilities: OptionSet, Hashable {
        let rawValue: Int
        static let screen = Capabilities(rawValue: 1)
        static let appAudio = Capabilities(rawValue: 2)
        static let microphone = Capabilities(rawValue: 4)
        static let camera = Capabilities(rawValue: 8)
        /// Only the app's own windows (in-app capture): less than `screen`, which includes it.
        static let ownWindows = Capabilities(rawValue: 16)
    }

    private struct ProcessKey: Hashable {
        let pid: Int32
        let startTime: UInt64
    }

    private struct Grant {
        var capabilities: Capabilities
        var lastActive: Int64
    }

    /// A question waiting for the person; `decided` is told the outcome once.
    private struct Pending: Sendable {
        let prompt: ConsentPrompt
        let key: ProcessKey
        let capabilities: Capabilities
        /// The connection that asked: its end withdraws the question.
        let asker: Int
        let decided: @Sendable (Decision) -> Void
        /// An agent has it; else it waits for the dialog being summoned.
        var delivered: Bool
        /// What ends with the question (a preview of it the dialog watches).
        var endings: [@Sendable () -> Void] = []
    }

    /// Something for the person that is not a question (a picker, a preview), waiting for the
    /// dialog being summoned to register; `shown` is told nil once an agent has it, else why not.
    private struct Offer: Sendable {
        let event: DaemonEvent
        let shown: @Sendable (String?) -> Void
    }

    private struct State {
        var grants: [ProcessKey: Grant] = [:]
        var pending: [String: Pending] = [:]
        var offers: [Int: Offer] = [:]
        var nextOffer = 0
        var agents: [Int: ClientOutbox] = [:]
        var nextAgent = 0
    }

    private let settings: Settings
    private let state = Mutex(State())
    /// Builds the consent page's URL for a request and its token, once the pages are up.
    private let pageURL: @Sendable (String, String) -> String?
    /// The consent page's one-time links: keyed by request, and never outliving it.
    private let pageLinks: PageLinks
    /// How the desktop names an app, by its executable (`DesktopEntries`).
    private let nameApp: @Sendable (String) -> DesktopEntries.App?
    /// Starts the desktop's dialog when no agent is registered; nil: such a request is declined.
    private let dialogs: (any ConsentDialogs)?

    /// - Parameter pageLinks: the page's links (a fake clock's, in tests); by default a link
    ///   and the page it opens last as long as the app waits for an answer, at most 5 minutes.
    init(settings: Settings, pageLinks: PageLinks? = nil, nameApp: @escaping @Sendable (String) -> DesktopEntries.App? = { _ in nil },
         dialogs: (any ConsentDialogs)? = nil, pageURL: @escaping @Sendable (String, String) -> String?) {
        self.settings = settings
        self.pageURL = pageURL
        self.nameApp = nameApp
        self.dialogs = dialogs
        let lifetime = min(settings.timeout, .seconds(300))
        self.pageLinks = pageLinks ?? PageLinks(lifetimes: PageLinks.Lifetimes(link: lifetime, session: lifetime).capped())
    }

    /// Whether the app may capture. Decided at once (a grant it holds, the policy, nobody to
    /// ask, too many questions waiting): that decision is returned. Otherwise the person is
    /// asked, `waiting` runs, nil is returned, and `decided` is called once with the answer,
    /// or a refusal after `timeout`, on the answering thread. Nothing waits meanwhile.
    /// `asker` names the connection that asks, for `withdraw`.
    func authorize(_ peer: PeerIdentity, capabilities: Capabilities, asker: Int = 0, waiting: () -> Void,
                   decided: @escaping @Sendable (Decision) -> Void) -> Decision? {
        guard let startTime = peer.startTime else { return .declined("the app's process could not be identified") }
        let key = ProcessKey(pid: peer.pid, startTime: startTime)
        let now = settings.clock.now().nanoseconds
        let granted = state.withLock { state -> Bool in
            state.grants = state.grants.filter { PeerIdentity.startTime(of: $0.key.pid) == $0.key.startTime }
            guard var grant = state.grants[key], grant.capabilities.isSuperset(of: capabilities),
                  now - grant.lastActive <= settings.idleLimit.nanoseconds else { return false }
            grant.lastActive = now
            state.grants[key] = grant
            return true
        }
        if granted { return .allowed }

        switch settings.policy.answer(for: peer.executable) {
        case .allow:
            grant(key, capabilities)
            return .allowed
        case .deny:
            return .declined("the consent policy does not allow \(peer.executable ?? "this app") to capture")
        case .ask:
            break
        }

        let requestID = "consent-" + LoopbackServer.randomToken(bytes: 8)
        let token = pageLinks.issue(for: requestID)
        let app = peer.executable.flatMap(nameApp)
        let prompt = ConsentPrompt(
            requestID: requestID, executable: peer.executable ?? "unknown app", pid: peer.pid, uid: peer.uid,
            screen: !capabilities.isDisjoint(with: [.screen, .ownWindows]), appAudio: capabilities.contains(.appAudio),
            microphone: capabilities.contains(.microphone), pageURL: pageURL(requestID, token),
            camera: capabilities.contains(.camera) ? true : nil, appName: app?.name, appIcon: app?.icon,
            ownWindowsOnly: capabilities.contains(.ownWindows) && !capabilities.contains(.screen) ? true : nil)
        var pending = Pending(prompt: prompt, key: key, capabilities: capabilities, asker: asker, decided: decided, delivered: false)
        // Whether the question is in, and the agents to ask: decided together, so that an agent
        // registering meanwhile is handed it once, either here or by `addAgent`.
        let agents = state.withLock { state -> [ClientOutbox]? in
            let waiting = state.pending.values
            guard waiting.count < Self.pendingInAll,
                  waiting.filter({ $0.prompt.uid == peer.uid }).count < Self.pendingPerUser else { return nil }
            pending.delivered = !state.agents.isEmpty
            state.pending[requestID] = pending
            return Array(state.agents.values)
        }
        guard let agents else {
            pageLinks.revoke(requestID)
            return .tooManyPending("\(Self.pendingPerUser) consent prompts of this user's apps (or \(Self.pendingInAll) in all) "
                + "are already waiting for the person; ask again once they are answered")
        }
        var reached = 0
        for agent in agents where (try? agent.send(DaemonEvent.consentRequested(prompt: prompt))) != nil { reached += 1 }
        if reached == 0 {
            guard let dialogs else {
                _ = state.withLock { $0.pending.removeValue(forKey: requestID) }
                pageLinks.revoke(requestID)
                return .declined(Self.nobodyAsked)
            }
            // Marked undelivered above when no agent was registered; with agents that could not be
            // reached it stays marked, so the dialog's deadline never declines a question an agent
            // registering meanwhile was handed (the timeout still ends it).
            summon(dialogs, for: [requestID])
        }
        waiting()
        // An answer that came already finds the request gone: this does nothing then.
        settings.timers.after(settings.timeout.inSeconds) { [self] in resolve(requestID, answer: nil) }
        return nil
    }

    static let nobodyAsked = "nobody was asked: no consent agent is running (start 'replay consent-agent', or give replayd a --consent-policy)"

    /// How long a dialog that started has to take the questions it was started for.
    static let dialogDeadline: Double = 20

    /// Starts the desktop's dialog for questions no agent has: it registers as an agent and is
    /// handed them. A dialog that cannot be started declines those still undelivered, saying
    /// why; so does one that started but has not taken them within `dialogDeadline` (refused
    /// as the person's tool, say), rather than leave the app waiting out the whole timeout.
    private func summon(_ dialogs: any ConsentDialogs, for requestIDs: [String], offers offerIDs: [Int] = []) {
        dialogs.summon { [self] failure in
            guard let failure else {
                settings.timers.after(Self.dialogDeadline) { [self] in
                    let why = "the desktop's dialog started but did not take it within \(Int(Self.dialogDeadline)) s (replayd's log says why)"
                    declineUndelivered(requestIDs, because: why)
                    withdrawUndelivered(offerIDs, because: why)
                }
                return
            }
            let why = "the desktop's dialog could not be shown (\(failure)); start 'replay consent-agent', or give replayd a --consent-policy"
            declineUndelivered(requestIDs, because: why)
            withdrawUndelivered(offerIDs, because: why)
        }
    }

    private func withdrawUndelivered(_ offerIDs: [Int], because why: String) {
        let undelivered = state.withLock { state in offerIDs.compactMap { state.offers.removeValue(forKey: $0) } }
        for offer in undelivered { offer.shown("no consent agent is running, and " + why) }
    }

    /// Shows the person something that is not a question (a picker, a preview): through the
    /// agents, or else through the desktop's dialog, summoned for it and handed it as it
    /// registers. `shown` is told nil once an agent has it, or why nobody does.
    func offer(_ event: DaemonEvent, shown: @escaping @Sendable (String?) -> Void) {
        let (agents, queued) = state.withLock { state -> ([ClientOutbox], Int?) in
            guard state.agents.isEmpty else { return (Array(state.agents.values), nil) }
            guard dialogs != nil else { return ([], nil) }
            state.nextOffer += 1
            state.offers[state.nextOffer] = Offer(event: event, shown: shown)
            return ([], state.nextOffer)
        }
        if let queued, let dialogs { return summon(dialogs, for: [], offers: [queued]) }
        let reached = agents.filter { (try? $0.send(event)) != nil }.count
        shown(reached > 0 ? nil : "no consent agent is running to show it to the person (start 'replay consent-agent')")
    }

    private func declineUndelivered(_ requestIDs: [String], because why: String) {
        let undelivered = state.withLock { state in requestIDs.filter { state.pending[$0]?.delivered == false } }
        for requestID in undelivered { resolve(requestID, answer: nil, reason: "nobody was asked: no consent agent is running, and " + why) }
    }

    /// The app that asked has gone (its connection closed): its questions are withdrawn, and
    /// the agents told, so a dialog asking about an app that is no longer there closes.
    func withdraw(asker: Int) {
        let requestIDs = state.withLock { state in state.pending.filter { $0.value.asker == asker }.map(\.key) }
        for requestID in requestIDs { resolve(requestID, answer: nil, reason: "the app went away before the person answered") }
    }

    /// An answer from an agent (no session needed: agents are the person's own tools) or from
    /// the page (which must show the session its one-time link was exchanged for). Returns
    /// false for an unknown or already answered request, or a wrong session.
    func answer(requestID: String, allow: Bool, session: String?) -> Bool {
        guard state.withLock({ $0.pending[requestID] }) != nil else { return false }
        if let session, !pageLinks.isSession(session, for: requestID) { return false }
        return resolve(requestID, answer: allow)
    }

    /// Ends a request with the person's answer, or nil when time ran out: the first to come
    /// decides; false for a request already decided.
    /// `reason` says why an unanswered request ended (default: its time ran out).
    @discardableResult
    private func resolve(_ requestID: String, answer: Bool?, reason: String? = nil) -> Bool {
        guard let pending = state.withLock({ $0.pending.removeValue(forKey: requestID) }) else { return false }
        pageLinks.revoke(requestID)
        pending.endings.forEach { $0() }
        let allowed = answer ?? false
        notifyAgents(.consentResolved(requestID: requestID, allowed: allowed))
        if allowed { grant(pending.key, pending.capabilities) }
        pending.decided(allowed ? .allowed : .declined(answer == nil
            ? reason ?? String(printf: "nobody answered within %g seconds", settings.timeout.inSeconds) : "the person declined"))
        return true
    }

    /// Opens the consent page with its one-time link: the request and the session for the
    /// page's cookie, or nil when the link is unknown, spent or expired.
    func openPage(requestID: String, token: String) -> (prompt: ConsentPrompt, session: String)? {
        guard let pending = state.withLock({ $0.pending[requestID] }),
              let session = pageLinks.redeem(token, for: requestID) else { return nil }
        return (pending.prompt, session)
    }

    /// The request behind a consent page, if `session` is that page's.
    func prompt(requestID: String, session: String) -> ConsentPrompt? {
        guard let pending = state.withLock({ $0.pending[requestID] }),
              pageLinks.isSession(session, for: requestID) else { return nil }
        return pending.prompt
    }

    /// The question `requestID` while it waits for the person.
    func waitingPrompt(_ requestID: String) -> ConsentPrompt? {
        state.withLock { $0.pending[requestID]?.prompt }
    }

    /// Runs `body` once `requestID` has ended (answered, timed out, withdrawn); false, running
    /// nothing, when it has ended already.
    func whenResolved(_ requestID: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard state.pending[requestID] != nil else { return false }
            state.pending[requestID]?.endings.append(body)
            return true
        }
    }

    /// The app is in use (capturing or focused): its consent does not lapse.
    func markActive(pid: Int32) {
        let now = settings.clock.now().nanoseconds
        state.withLock { state in
            for key in state.grants.keys where key.pid == pid { state.grants[key]?.lastActive = now }
        }
    }

    var idleLimit: Duration { settings.idleLimit }

    var consentedProcesses: [Int32] { state.withLock { $0.grants.keys.map(\.pid) } }

    /// Registers an agent: it is told so, then handed every question and offer still waiting
    /// (those that came before it, the dialog's reason to start), before any that comes after.
    func addAgent(_ channel: ClientOutbox) -> Int {
        let (id, handed) = state.withLock { state -> (Int, [Offer]) in
            try? channel.send(DaemonEvent.consentAgentRegistered)
            for requestID in state.pending.keys.sorted() {
                guard let prompt = state.pending[requestID]?.prompt,
                      (try? channel.send(DaemonEvent.consentRequested(prompt: prompt))) != nil else { continue }
                state.pending[requestID]?.delivered = true
            }
            var handed: [Offer] = []
            for offerID in state.offers.keys.sorted() {
                guard let offer = state.offers[offerID], (try? channel.send(offer.event)) != nil else { continue }
                state.offers.removeValue(forKey: offerID)
                handed.append(offer)
            }
            state.nextAgent += 1
            state.agents[state.nextAgent] = channel
            return (state.nextAgent, handed)
        }
        for offer in handed { offer.shown(nil) }
        return id
    }

    /// An agent went (the dialog exits once it shows nothing): questions still waiting with
    /// no agent left summon the dialog again, rather than wait out their time unseen.
    func removeAgent(_ id: Int) {
        let orphaned = state.withLock { state -> [String] in
            state.agents.removeValue(forKey: id)
            guard state.agents.isEmpty else { return [] }
            for requestID in state.pending.keys { state.pending[requestID]?.delivered = false }
            return Array(state.pending.keys)
        }
        if let dialogs, !orphaned.isEmpty { summon(dialogs, for: orphaned) }
    }

    /// Tells every agent; returns how many were reached.
    @discardableResult
    func notifyAgents(_ event: DaemonEvent) -> Int {
        let agents = state.withLock { Array($0.agents.values) }
        return agents.filter { (try? $0.send(event)) != nil }.count
    }

    private func grant(_ key: ProcessKey, _ capabilities: Capabilities) {
        let now = settings.clock.now().nanoseconds
        state.withLock { state in
            var grant = state.grants[key] ?? Grant(capabilities: [], lastActive: now)
            // The whole screen holds the app's own windows; a grant of those alone is not the screen.
            grant.capabilities.formUnion(capabilities.contains(.screen) ? capabilities.union(.ownWindows) : capabilities)
            grant.lastActive = now
            state.grants[key] = grant
        }
    }

}

extension Duration {
    var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
    /// In seconds, for dispatch's deadlines.
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
