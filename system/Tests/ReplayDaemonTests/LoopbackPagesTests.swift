import ReplayCaptureModel
@testable import ReplayDaemon
import ReplayIPC
import ReplayMedia
import Testing

/// The fake clock (Fakes/FakeCapture.swift) as the page links read it.
extension ManualClock {
    var nanoseconds: @Sendable () -> Int64 { { [self] in now().nanoseconds } }

    func advance(_ duration: Duration) {
        set(now().seconds + Double(duration.nanoseconds) / 1e9)
    }
}

@Suite struct LoopbackPagesTests {
    @Test func anAppsExecutableCannotInjectMarkupIntoTheConsentPage() {
        let prompt = ConsentPrompt(
            requestID: "consent-1", executable: "/tmp/<script>alert(1)</script>\"evil", pid: 1, uid: 2,
            screen: true, appAudio: false, microphone: true, pageURL: nil)
        let page = PageTemplates.consent(prompt)
        #expect(!page.contains("<script>"))
        #expect(page.contains("&lt;script&gt;"))
        #expect(page.contains("the screen and the microphone"))
    }

    @Test func byteRangesAreParsedAndClampedToTheFile() {
        #expect(LoopbackPages.byteRange("bytes=0-99", size: 1000) == 0...99)
        #expect(LoopbackPages.byteRange("bytes=900-", size: 1000) == 900...999)
        #expect(LoopbackPages.byteRange("bytes=900-5000", size: 1000) == 900...999)
        #expect(LoopbackPages.byteRange("bytes=1000-", size: 1000) == nil)
        #expect(LoopbackPages.byteRange("bytes=5-1", size: 1000) == nil)
        #expect(LoopbackPages.byteRange("bytes=0-1,5-6", size: 1000) == nil)
        #expect(LoopbackPages.byteRange("lines=0-1", size: 1000) == nil)
    }

    // MARK: one-time links

    static let lifetimes = PageLinks.Lifetimes(link: .seconds(300), session: .seconds(1800))

    @Test func aLinkOpensItsPageOnceAndOnlyForItsSubject() throws {
        let links = PageLinks(lifetimes: Self.lifetimes, now: ManualClock().nanoseconds)
        let token = links.issue(for: "rec-1")
        #expect(links.redeem(token, for: "rec-2") == nil, "a link opened another recording's page")
        let session = try #require(links.redeem(token, for: "rec-1"))
        #expect(links.redeem(token, for: "rec-1") == nil, "a link opened its page twice")
        #expect(links.isSession(session, for: "rec-1"))
        #expect(!links.isSession(session, for: "rec-2"))
        #expect(!links.isSession(token, for: "rec-1"), "a link is not a session")
        #expect(session != token)
    }

    @Test func linksAndSessionsExpireOnTheClock() throws {
        let clock = ManualClock()
        let links = PageLinks(lifetimes: Self.lifetimes, now: clock.nanoseconds)
        let late = links.issue(for: "rec-1")
        let session = try #require(links.redeem(links.issue(for: "rec-1"), for: "rec-1"))
        clock.advance(.seconds(299))
        #expect(links.isSession(session, for: "rec-1"))
        clock.advance(.seconds(2))
        #expect(links.redeem(late, for: "rec-1") == nil, "a link outlived its 5 minutes")
        #expect(links.isSession(session, for: "rec-1"))
        clock.advance(.seconds(1500))
        #expect(!links.isSession(session, for: "rec-1"), "a session outlived its 30 minutes")
        // A shorter lifetime for a subject that ends sooner (a consent request) is kept; a longer one is not.
        let short = links.issue(for: "consent-1", lifetime: .seconds(10))
        let long = links.issue(for: "consent-1", lifetime: .seconds(3600))
        clock.advance(.seconds(11))
        #expect(links.redeem(short, for: "consent-1") == nil)
        clock.advance(.seconds(290))
        #expect(links.redeem(long, for: "consent-1") == nil)
    }

    @Test func revokingASubjectEndsItsLinksAndSessions() throws {
        let links = PageLinks(lifetimes: Self.lifetimes, now: ManualClock().nanoseconds)
        let session = try #require(links.redeem(links.issue(for: "rec-1"), for: "rec-1"))
        let unused = links.issue(for: "rec-1")
        let other = links.issue(for: "rec-2")
        links.revoke("rec-1")
        #expect(!links.isSession(session, for: "rec-1"))
        #expect(links.redeem(unused, for: "rec-1") == nil)
        #expect(links.redeem(other, for: "rec-2") != nil)
    }

    @Test func eachPreviewRequestGetsAFreshLink() {
        let previews = PreviewTokens(links: PageLinks(lifetimes: PreviewTokens.lifetimes, now: ManualClock().nanoseconds))
        let first = previews.token(for: "rec-1"), second = previews.token(for: "rec-1")
        #expect(first != second)
        #expect(previews.links.redeem(first, for: "rec-1") != nil)
        #expect(previews.links.redeem(second, for: "rec-1") != nil)
    }

    @Test func theTestLifetimeCapOnlyShortens() {
        let lifetimes = PageLinks.Lifetimes(link: .seconds(300), session: .seconds(1800))
        #expect(lifetimes.capped(environment: [:]) == lifetimes)
        #expect(lifetimes.capped(environment: [PageLinks.Lifetimes.capVariable: "2"]) == .init(link: .seconds(2), session: .seconds(2)))
        #expect(lifetimes.capped(environment: [PageLinks.Lifetimes.capVariable: "99999"]) == lifetimes)
        #expect(lifetimes.capped(environment: [PageLinks.Lifetimes.capVariable: "-1"]) == lifetimes)
        #expect(lifetimes.capped(environment: [PageLinks.Lifetimes.capVariable: "soon"]) == lifetimes)
    }

    @Test func aPickerStartsOneBroadcastAndKnowsWhichItStarted() throws {
        let pickers = BroadcastPickers(links: PageLinks(lifetimes: BroadcastPickers.lifetimes, now: ManualClock().nanoseconds))
        let (daemonSide, clientSide) = try socketPair()
        defer { clientSide.close() }
        let me = try clientSide.peer()
        let (id, token) = pickers.open(.init(host: daemonSide, hostPeer: me, preferredExtension: nil, microphone: false, scope: .screen))
        #expect(pickers.picker(id, session: token) == nil, "the link itself is not a session")
        let session = try #require(pickers.links.redeem(token, for: id))
        #expect(pickers.picker(id, session: session) != nil)
        #expect(pickers.broadcastID(of: id) == nil)
        #expect(pickers.claimStart(id))
        #expect(!pickers.claimStart(id), "two starts at once")
        pickers.finishStart(id, broadcastID: nil)
        #expect(pickers.claimStart(id), "a failed start lets the person try again")
        pickers.finishStart(id, broadcastID: "bc-1")
        #expect(!pickers.claimStart(id), "a second broadcast from one picker")
        #expect(pickers.broadcastID(of: id) == "bc-1")
        pickers.close(host: daemonSide)
        #expect(pickers.picker(id, session: session) == nil)
    }

    // MARK: Host and Origin

    @Test func onlyTheLoopbackNameAndPortAndTheirOwnFormsGetThrough() {
        let problem = LoopbackPages.requestProblem
        #expect(problem("127.0.0.1:8765", nil, true, 8765) == nil)
        #expect(problem("localhost:8765", nil, true, 8765) == nil)
        #expect(problem("rebind.example:8765", nil, true, 8765) != nil)
        #expect(problem("127.0.0.1:8766", nil, true, 8765) != nil)
        #expect(problem("127.0.0.1", nil, true, 8765) != nil)
        #expect(problem(nil, nil, true, 8765) != nil)
        #expect(problem("127.0.0.1:8765", "http://127.0.0.1:8765", false, 8765) == nil)
        #expect(problem("127.0.0.1:8765", nil, false, 8765) != nil)
        #expect(problem("127.0.0.1:8765", "null", false, 8765) != nil)
        #expect(problem("127.0.0.1:8765", "http://evil.example", false, 8765) != nil)
        #expect(problem("127.0.0.1:8765", "http://localhost:8765", false, 8765) != nil,
                "a form from the other name is another origin")
    }

    @Test func thePagesCarryNoTokenInTheirForms() {
        let prompt = ConsentPrompt(requestID: "consent-1", executable: "/usr/bin/app", pid: 1, uid: 2,
                                   screen: true, appAudio: false, microphone: false, pageURL: "http://127.0.0.1:1/consent/consent-1?token=abc")
        #expect(!PageTemplates.consent(prompt).contains("token"))
    }
}
