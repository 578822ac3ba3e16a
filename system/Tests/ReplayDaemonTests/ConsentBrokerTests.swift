import Foundation
import NIOCore
import NIOPosix
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import ReplaySystem
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's side of a connection (an outbox on a real event loop) and the client's.
func socketPair(outboxLimit: Int = ClientOutbox.defaultLimit) throws -> (daemonSide: ClientOutbox, clientSide: MessageChannel) {
    var fds: [Int32] = [0, 0]
    try syscall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) }
    let channel = try ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).withConnectedSocket(fds[0]).wait()
    return (ClientOutbox(channel: channel, limit: outboxLimit), MessageChannel(fd: fds[1], limits: .events))
}

/// A consent agent on its own thread: answers every request with `allow` and counts them.
final class ScriptedAgent: Sendable {
    let prompts = Mutex<[ConsentPrompt]>([])
    let channel: ClientOutbox

    init(broker: ConsentBroker, allow: Bool) throws {
        let (daemonSide, clientSide) = try socketPair()
        channel = daemonSide
        _ = broker.addAgent(daemonSide)
        Thread.detachNewThread { [self] in
            while let (event, _) = (try? clientSide.receive(DaemonEvent.self)) ?? nil {
                if case .consentRequested(let prompt) = event {
                    self.prompts.withLock { $0.append(prompt) }
                    _ = broker.answer(requestID: prompt.requestID, allow: allow, session: nil)
                }
            }
        }
    }

    var asked: Int { prompts.withLock { $0.count } }
}

/// Registers the daemon's side as an agent, and reads the welcome that comes first.
func register(_ daemonSide: ClientOutbox, _ clientSide: MessageChannel, with broker: ConsentBroker) throws {
    _ = broker.addAgent(daemonSide)
    guard case .consentAgentRegistered? = try clientSide.receive(DaemonEvent.self)?.message else {
        Issue.record("the agent was not welcomed first")
        return
    }
}

/// The desktop's dialog as the broker sees it: summoned (counted), and either coming up as
/// the test says (it registers an agent) or failing with `failure`.
final class FakeDialogs: ConsentDialogs {
    let summoned = Mutex(0)
    let failure: String?

    init(failure: String? = nil) { self.failure = failure }

    func summon(_ failed: @escaping @Sendable (String?) -> Void) {
        summoned.withLock { $0 += 1 }
        failed(failure)
    }

    var count: Int { summoned.withLock { $0 } }
}

extension ConsentBroker {
    /// The decision, awaiting the person's answer when one is asked (an issue if none comes).
    func decide(_ peer: PeerIdentity, capabilities: Capabilities, sourceLocation: SourceLocation = #_sourceLocation,
                waiting: () -> Void) async -> Decision {
        let answer = Completion<Decision>()
        if let now = authorize(peer, capabilities: capabilities, waiting: waiting, decided: { answer.complete($0) }) {
            return now
        }
        return await answer.awaited("the decision", sourceLocation: sourceLocation) ?? .declined("no decision")
    }
}

@Suite struct ConsentBrokerTests {
    /// This test process, as the daemon would see it on a socket.
    let me: PeerIdentity

    init() throws {
        let (_, b) = try socketPair()
        me = try b.peer()
    }

    func broker(_ policy: ConsentPolicy = .askEveryone, idle: Duration = .seconds(480), clock: ManualClock? = nil) -> ConsentBroker {
        var settings = ConsentBroker.Settings(policy: policy, timeout: .seconds(10), idleLimit: idle)
        if let clock { settings.clock = clock }
        return ConsentBroker(settings: settings) { id, token in
            "http://127.0.0.1:1/consent/\(id)?token=\(token)"
        }
    }

    @Test func withNoAgentAndNoPolicyNobodyIsAskedAndTheAppIsDeclined() async {
        let decision = await broker().decide(me, capabilities: .screen) {}
        guard case .declined(let why) = decision else {
            Issue.record("allowed with nobody to ask")
            return
        }
        #expect(why.contains("no consent agent"))
    }

    @Test func thePolicyAnswersForItsApps() async throws {
        let executable = try #require(me.executable)
        let allowing = broker(ConsentPolicy(default: .deny, apps: [executable: .allow]))
        #expect(await allowing.decide(me, capabilities: [.screen, .microphone]) {} == .allowed)
        let denying = broker(ConsentPolicy(default: .allow, apps: [executable: .deny]))
        #expect(await denying.decide(me, capabilities: .screen) {} != .allowed)
    }

    @Test func consentLastsForTheProcessAndCoversOnlyWhatWasAsked() async throws {
        let broker = broker()
        let agent = try ScriptedAgent(broker: broker, allow: true)
        var waited = 0
        #expect(await broker.decide(me, capabilities: .screen) { waited += 1 } == .allowed)
        #expect(await broker.decide(me, capabilities: .screen) { waited += 1 } == .allowed)
        #expect(agent.asked == 1 && waited == 1)
        // The microphone was not part of the first answer: ask again.
        #expect(await broker.decide(me, capabilities: [.screen, .microphone]) {} == .allowed)
        #expect(agent.asked == 2)
        let prompt = try #require(agent.prompts.withLock { $0.last })
        #expect(prompt.microphone && prompt.screen && !prompt.appAudio)
        #expect(prompt.pid == getpid() && prompt.executable == me.executable)
    }

    /// In-app capture asks for the app's own windows, and the prompt says so; that grant is
    /// not the screen (a recording asks again), while a grant of the screen holds them.
    @Test func ownWindowsAreAskedForAsSuchAndAreLessThanTheScreen() async throws {
        let broker = broker()
        let agent = try ScriptedAgent(broker: broker, allow: true)
        #expect(await broker.decide(me, capabilities: .ownWindows) {} == .allowed)
        let prompt = try #require(agent.prompts.withLock { $0.last })
        #expect(prompt.screen && prompt.ownWindowsOnly == true && prompt.capturedThings == "its own windows")
        #expect(await broker.decide(me, capabilities: .ownWindows) {} == .allowed)
        #expect(agent.asked == 1)
        #expect(await broker.decide(me, capabilities: .screen) {} == .allowed)
        #expect(agent.asked == 2, "the screen is more than the windows it was allowed")
        #expect(agent.prompts.withLock { $0.last }?.ownWindowsOnly == nil)

        let other = self.broker()
        let second = try ScriptedAgent(broker: other, allow: true)
        #expect(await other.decide(me, capabilities: .screen) {} == .allowed)
        #expect(await other.decide(me, capabilities: .ownWindows) {} == .allowed)
        #expect(second.asked == 1, "the screen holds the app's own windows")
    }

    @Test func consentLapsesAfterTheIdleLimitWithoutCaptureOrFocus() async throws {
        // Idleness on a manual clock: how busy the machine is cannot move it.
        let clock = ManualClock()
        clock.set(100)
        let broker = broker(idle: .seconds(1), clock: clock)
        let agent = try ScriptedAgent(broker: broker, allow: true)
        #expect(await broker.decide(me, capabilities: .screen) {} == .allowed)
        clock.set(100.6)
        broker.markActive(pid: me.pid)
        clock.set(101.2)
        #expect(await broker.decide(me, capabilities: .screen) {} == .allowed)
        #expect(agent.asked == 1, "activity keeps consent alive")
        clock.set(102.7)
        #expect(await broker.decide(me, capabilities: .screen) {} == .allowed)
        #expect(agent.asked == 2, "idle past the limit: asked again")
    }

    @Test func aRefusalIsUserDeclinedAndNotRemembered() async throws {
        let broker = broker()
        let agent = try ScriptedAgent(broker: broker, allow: false)
        #expect(await broker.decide(me, capabilities: .screen) {} == .declined("the person declined"))
        #expect(await broker.decide(me, capabilities: .screen) {} != .allowed)
        #expect(agent.asked == 2)
    }

    @Test func aQuestionForThePersonReturnsAtOnceAndItsAnswerComesOnce() async throws {
        let broker = broker()
        let (daemonSide, clientSide) = try socketPair()
        try register(daemonSide, clientSide, with: broker)
        let decisions = Mutex<[ConsentBroker.Decision]>([])
        let decided = Completion<Void>()
        var waited = 0
        let now = broker.authorize(me, capabilities: .screen, waiting: { waited += 1 }) { decision in
            decisions.withLock { $0.append(decision) }
            decided.complete(())
        }
        // Nobody has answered yet, and nothing waited for them: the call is back, undecided.
        #expect(now == nil && waited == 1 && decisions.withLock { $0.isEmpty })
        guard case .consentRequested(let prompt)? = try clientSide.receive(DaemonEvent.self)?.message else {
            Issue.record("the agent was not asked")
            return
        }
        #expect(broker.answer(requestID: prompt.requestID, allow: true, session: nil))
        #expect(await decided.awaited("the decision") != nil)
        #expect(!broker.answer(requestID: prompt.requestID, allow: false, session: nil), "a second answer counted")
        #expect(decisions.withLock { $0 } == [.allowed])
        #expect(await broker.decide(me, capabilities: .screen) {} == .allowed, "the answer was not kept")
    }

    /// The timeout is counted on the broker's timers: declined once it has passed, not before.
    @Test func aQuestionNobodyAnswersIsDeclinedWhenItsTimeRunsOut() throws {
        let timers = ManualTimers()
        var settings = ConsentBroker.Settings(timeout: .seconds(120))
        settings.timers = timers
        let broker = ConsentBroker(settings: settings) { id, token in
            "http://127.0.0.1:1/consent/\(id)?token=\(token)"
        }
        let (daemonSide, clientSide) = try socketPair()
        try register(daemonSide, clientSide, with: broker)
        let decision = Completion<ConsentBroker.Decision>()
        #expect(broker.authorize(me, capabilities: .screen, waiting: {}, decided: { decision.complete($0) }) == nil)
        guard case .consentRequested(let prompt)? = try clientSide.receive(DaemonEvent.self)?.message else {
            Issue.record("the agent was not asked")
            return
        }
        timers.advance(by: 119.9)
        #expect(decision.value == nil, "declined before its time ran out")
        timers.advance(by: 0.2)
        #expect(decision.value == .declined("nobody answered within 120 seconds"))
        #expect(!broker.answer(requestID: prompt.requestID, allow: true, session: nil), "an answer after the time ran out counted")
    }

    @Test func thePageOpensOnceWithTheRequestsOwnLinkAndOnlyItsSessionAnswers() async throws {
        let broker = broker()
        let (daemonSide, clientSide) = try socketPair()
        try register(daemonSide, clientSide, with: broker)
        let decision = Completion<ConsentBroker.Decision>()
        #expect(broker.authorize(me, capabilities: .screen, waiting: {}, decided: { decision.complete($0) }) == nil)
        guard case .consentRequested(let prompt)? = try clientSide.receive(DaemonEvent.self)?.message,
              let url = prompt.pageURL, let token = url.split(separator: "=").last.map(String.init) else {
            Issue.record("no prompt with a page URL")
            return
        }
        #expect(broker.openPage(requestID: prompt.requestID, token: String(repeating: "0", count: token.count)) == nil)
        #expect(!broker.answer(requestID: prompt.requestID, allow: true, session: token), "the link itself is not a session")
        let opened = try #require(broker.openPage(requestID: prompt.requestID, token: token))
        #expect(opened.prompt == prompt)
        #expect(broker.openPage(requestID: prompt.requestID, token: token) == nil, "the link opened the page twice")
        #expect(broker.prompt(requestID: prompt.requestID, session: opened.session) == prompt)
        #expect(!broker.answer(requestID: prompt.requestID, allow: true, session: "wrong"))
        #expect(broker.answer(requestID: prompt.requestID, allow: true, session: opened.session))
        #expect(await decision.awaited("the decision") == .allowed)
        // The request is over: its page and session with it.
        #expect(broker.prompt(requestID: prompt.requestID, session: opened.session) == nil)
    }

    @Test func theConsentLinkExpiresOnTheClock() throws {
        let clock = ManualClock()
        let links = PageLinks(lifetimes: .init(link: .seconds(60), session: .seconds(60)), now: clock.nanoseconds)
        let broker = ConsentBroker(settings: .init(timeout: .seconds(600)), pageLinks: links) { id, token in
            "http://127.0.0.1:1/consent/\(id)?token=\(token)"
        }
        let (daemonSide, clientSide) = try socketPair()
        try register(daemonSide, clientSide, with: broker)
        #expect(broker.authorize(me, capabilities: .screen, waiting: {}, decided: { _ in }) == nil)
        guard case .consentRequested(let prompt)? = try clientSide.receive(DaemonEvent.self)?.message,
              let token = prompt.pageURL?.split(separator: "=").last.map(String.init) else {
            Issue.record("no prompt with a page URL")
            return
        }
        clock.advance(.seconds(61))
        #expect(broker.openPage(requestID: prompt.requestID, token: token) == nil, "an expired link opened the page")
        _ = broker.answer(requestID: prompt.requestID, allow: false, session: nil)
    }

    // MARK: the desktop's dialog

    func dialogBroker(_ dialogs: FakeDialogs, timers: ManualTimers = ManualTimers()) -> ConsentBroker {
        var settings = ConsentBroker.Settings(timeout: .seconds(120))
        settings.timers = timers
        return ConsentBroker(settings: settings, dialogs: dialogs) { id, token in "http://127.0.0.1:1/consent/\(id)?token=\(token)" }
    }

    /// No agent: the dialog is summoned, and once it registers it is handed the question that
    /// was waiting for it, after its welcome; its answer decides.
    @Test func withNoAgentTheDialogIsSummonedAndHandedTheWaitingQuestion() throws {
        let dialogs = FakeDialogs()
        let broker = dialogBroker(dialogs)
        let decision = Completion<ConsentBroker.Decision>()
        var waited = 0
        #expect(broker.authorize(me, capabilities: .screen, waiting: { waited += 1 }, decided: { decision.complete($0) }) == nil)
        #expect(dialogs.count == 1 && waited == 1 && decision.value == nil)
        let (daemonSide, clientSide) = try socketPair()
        try register(daemonSide, clientSide, with: broker)
        guard case .consentRequested(let prompt)? = try clientSide.receive(DaemonEvent.self)?.message else {
            Issue.record("the dialog was not handed the waiting question")
            return
        }
        #expect(broker.answer(requestID: prompt.requestID, allow: true, session: nil))
        #expect(decision.value == .allowed)
    }

    @Test func aDialogThatCannotBeStartedDeclinesSayingWhy() {
        let dialogs = FakeDialogs(failure: "replay-ui is not installed for this session's bus")
        let decision = Completion<ConsentBroker.Decision>()
        #expect(dialogBroker(dialogs).authorize(me, capabilities: .screen, waiting: {}, decided: { decision.complete($0) }) == nil)
        guard case .declined(let why)? = decision.value else {
            Issue.record("not declined: \(String(describing: decision.value))")
            return
        }
        #expect(why.contains("no consent agent is running") && why.contains("replay-ui is not installed"), "\(why)")
    }

    /// The dialog exits once it shows nothing; a question that comes as it goes is not left to
    /// time out unseen: the dialog is summoned again, and handed it.
    @Test func anAgentLeavingWithAQuestionWaitingSummonsTheDialogAgain() throws {
        let dialogs = FakeDialogs()
        let broker = dialogBroker(dialogs)
        let (daemonSide, clientSide) = try socketPair()
        _ = broker.addAgent(daemonSide)
        let agent = broker.addAgent(daemonSide)
        let decision = Completion<ConsentBroker.Decision>()
        #expect(broker.authorize(me, capabilities: .screen, waiting: {}, decided: { decision.complete($0) }) == nil)
        #expect(dialogs.count == 0, "summoned with an agent registered")
        clientSide.close()
        broker.removeAgent(agent)
        #expect(dialogs.count == 0, "summoned while an agent remains")
        broker.removeAgent(agent - 1)
        #expect(dialogs.count == 1)
        let (again, againClient) = try socketPair()
        try register(again, againClient, with: broker)
        guard case .consentRequested? = try againClient.receive(DaemonEvent.self)?.message else {
            Issue.record("the dialog summoned again was not handed the question")
            return
        }
        #expect(decision.value == nil)
    }

    /// The app hangs up while the person is asked: its question is withdrawn and the agents told,
    /// so the dialog asking about it closes.
    @Test func anAppThatGoesWithdrawsItsQuestion() throws {
        let broker = broker()
        let (daemonSide, clientSide) = try socketPair()
        try register(daemonSide, clientSide, with: broker)
        let decision = Completion<ConsentBroker.Decision>()
        #expect(broker.authorize(me, capabilities: .screen, asker: 7, waiting: {}, decided: { decision.complete($0) }) == nil)
        guard case .consentRequested(let prompt)? = try clientSide.receive(DaemonEvent.self)?.message else {
            Issue.record("the agent was not asked")
            return
        }
        broker.withdraw(asker: 8)
        #expect(decision.value == nil, "another connection's end withdrew it")
        broker.withdraw(asker: 7)
        #expect(decision.value == .declined("the app went away before the person answered"))
        guard case .consentResolved(let requestID, let allowed)? = try clientSide.receive(DaemonEvent.self)?.message else {
            Issue.record("the agent was not told")
            return
        }
        #expect(requestID == prompt.requestID && !allowed)
    }

    /// A dialog that started but never took its question (refused as the person's tool, say)
    /// does not leave the app waiting out the whole timeout.
    @Test func aDialogThatStartsButNeverTakesTheQuestionDeclinesItSoon() {
        let timers = ManualTimers()
        let broker = dialogBroker(FakeDialogs(), timers: timers)
        let decision = Completion<ConsentBroker.Decision>()
        #expect(broker.authorize(me, capabilities: .screen, waiting: {}, decided: { decision.complete($0) }) == nil)
        timers.advance(by: ConsentBroker.dialogDeadline - 0.1)
        #expect(decision.value == nil)
        timers.advance(by: 0.2)
        guard case .declined(let why)? = decision.value else {
            Issue.record("not declined: \(String(describing: decision.value))")
            return
        }
        #expect(why.contains("did not take it within"), "\(why)")
    }

    /// One that took it in time: the deadline passes, and the person still decides.
    @Test func aQuestionTheDialogTookIsNotDeclinedByItsDeadline() throws {
        let timers = ManualTimers()
        let broker = dialogBroker(FakeDialogs(), timers: timers)
        let decision = Completion<ConsentBroker.Decision>()
        #expect(broker.authorize(me, capabilities: .screen, waiting: {}, decided: { decision.complete($0) }) == nil)
        let (daemonSide, clientSide) = try socketPair()
        try register(daemonSide, clientSide, with: broker)
        timers.advance(by: ConsentBroker.dialogDeadline + 1)
        #expect(decision.value == nil, "declined though the dialog took the question")
    }

    /// A picker or a preview with no agent registered summons the dialog, which is handed it
    /// as it registers (after the questions); only then is the app told it is shown.
    @Test func anOfferWithNoAgentSummonsTheDialogAndIsHandedToIt() throws {
        let dialogs = FakeDialogs()
        let broker = dialogBroker(dialogs)
        let shown = Completion<String?>()
        let offer = PickerOffer(executable: "/usr/bin/app", pageURL: "http://127.0.0.1:1/picker/p", pickerID: "picker-1")
        broker.offer(.pickerOffered(offer: offer)) { shown.complete($0) }
        #expect(dialogs.count == 1 && shown.value == nil, "told before an agent had it")
        let (daemonSide, clientSide) = try socketPair()
        try register(daemonSide, clientSide, with: broker)
        guard case .pickerOffered(let handed)? = try clientSide.receive(DaemonEvent.self)?.message else {
            Issue.record("the dialog was not handed the picker")
            return
        }
        #expect(handed.pickerID == "picker-1")
        #expect(shown.value == .some(nil))
        // With an agent there, the next goes straight to it, and nothing is summoned.
        let again = Completion<String?>()
        broker.offer(.previewOffered(offer: PreviewOffer(recordingID: "r", executable: "/usr/bin/app", pageURL: "u"))) { again.complete($0) }
        #expect(again.value == .some(nil) && dialogs.count == 1)
        guard case .previewOffered? = try clientSide.receive(DaemonEvent.self)?.message else {
            Issue.record("the agent was not handed the preview")
            return
        }
    }

    /// An offer the dialog never takes is withdrawn at its deadline, saying why; with no
    /// dialog at all the app hears at once that nobody can show it.
    @Test func anOfferNobodyTakesFailsSayingWhy() {
        let timers = ManualTimers()
        let shown = Completion<String?>()
        dialogBroker(FakeDialogs(), timers: timers).offer(.pickerShown) { shown.complete($0) }
        timers.advance(by: ConsentBroker.dialogDeadline + 0.1)
        #expect(shown.value??.contains("did not take it within") == true, "\(String(describing: shown.value))")

        let failed = Completion<String?>()
        dialogBroker(FakeDialogs(failure: "no session bus")).offer(.pickerShown) { failed.complete($0) }
        #expect(failed.value??.contains("no session bus") == true, "\(String(describing: failed.value))")

        let alone = Completion<String?>()
        broker().offer(.pickerShown) { alone.complete($0) }
        #expect(alone.value??.contains("no consent agent is running") == true, "\(String(describing: alone.value))")
    }
}
