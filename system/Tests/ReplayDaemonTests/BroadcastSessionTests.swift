import Foundation
import Logging
import ReplayCapture
@testable import ReplayDaemon
import ReplayIPC
import ReplayMedia
@testable import ReplaySession
import ReplaySystem
import Synchronization
import Testing

/// A broadcast's life with a fake extension and a fake screen: every way it can end, and
/// that each way leaves nothing behind (process ended, connection closed, surfaces freed).
@Suite struct BroadcastSessionTests {
    /// Pings every 20 ms, but deadlines far beyond any pause a loaded machine makes: a test
    /// that is not about a deadline must not fail because the scheduler was slow (on CI a
    /// 0.15 s heartbeat timeout once ended a healthy broadcast). A test about one deadline
    /// shortens only that one.
    static let patient = BroadcastSession.Timing(
        ready: 60, heartbeatInterval: 0.02, heartbeatTimeout: 60, finishGrace: 60, failureGrace: 0.01, closeGrace: 10,
        watchInterval: 0.01)

    struct Rig {
        let backend = FakeCaptureBackend()
        let fake: FakeExtension
        let clock = ManualClock()
        /// The session's timers: dispatch's, or moved by hand in the tests of a deadline.
        let timers: any Timers
        let session: BroadcastSession

        init(_ behaviour: FakeExtension.Behaviour = .init(), timing: BroadcastSession.Timing = BroadcastSessionTests.patient,
             setup: [String: String] = [:], timers: any Timers = DispatchTimers()) {
            fake = FakeExtension(behaviour)
            self.timers = timers
            let manifest = ExtensionManifest(id: "fake", displayName: "Fake", executable: "/nonexistent/fake",
                                             extensionPoint: "broadcast-services-upload", setupFields: [])
            let parts = SessionParts(capture: backend, movies: FakeMovieSink(), extensions: fake, clock: clock, timers: timers)
            let protectedWindows = ProtectedWindows()
            session = BroadcastSession(
                id: "bc-test", request: BroadcastRequest(extensionID: "fake", setup: setup), host: nil, manifest: manifest,
                parts: parts, timing: timing, protectedWindows: protectedWindows, logger: Logger(label: "test"),
                makeFeed: parts.inProcessBroadcastFeed(id: "bc-test", protectedWindows: protectedWindows))
        }

        /// Starts it and awaits the outcome (neither the session nor the test holds a thread meanwhile).
        func start(sourceLocation: SourceLocation = #_sourceLocation) async throws(DaemonError) {
            guard let failure = await beginStart().awaited("the start's outcome", sourceLocation: sourceLocation) else {
                throw DaemonError(code: ErrorCode(rawValue: "testNeverAnswered"), message: "no outcome within \(answerDeadline) s")
            }
            if let failure { throw failure }
        }

        /// Starts it; its outcome, for the test to await later.
        func beginStart() -> Completion<DaemonError?> {
            let outcome = Completion<DaemonError?>()
            session.start(hidden: [], applicationInfo: ["name": "test"]) { outcome.complete($0) }
            return outcome
        }

        /// Everything the session held for this broadcast is gone.
        func expectNothingLeft(_ sourceLocation: SourceLocation = #_sourceLocation) {
            let after = fake.snapshot
            #expect(after.exited != nil, "the extension process is gone", sourceLocation: sourceLocation)
            #expect(after.closed, "its connection is closed", sourceLocation: sourceLocation)
            #expect(session.heldSurfaces == 0, "its surfaces are unmapped", sourceLocation: sourceLocation)
            #expect(session.phase.isOver, sourceLocation: sourceLocation)
        }
    }

    @Test func aStopFinishesTheExtensionAndReleasesEverything() async throws {
        let rig = Rig()
        try await rig.start()
        #expect(rig.session.status.state == .live)
        for index in 0..<10 { rig.backend.screen.send(.frame(at: 100 + Double(index) / 30)) }
        await eventually("10 pictures sent") { rig.fake.received.filter { if case .video = $0 { true } else { false } }.count == 10 }
        rig.session.stop()
        let status = try await rig.session.waitUntilFinished()
        #expect(status.state == .finished && status.lastError == nil)
        #expect(status.framesSent == 10)
        #expect(rig.fake.received.contains(.finished))
        #expect(!rig.fake.snapshot.killed, "a finishing extension is given time to exit by itself")
        rig.expectNothingLeft()
    }

    /// ReplayKit's order: an extension that ends its broadcast with an error still hears
    /// `broadcastFinished`, and has the time a stop gives to close its stream and exit.
    @Test func finishingWithAnErrorTellsTheExtensionFinishedAndLetsItExit() async throws {
        let rig = Rig()
        try await rig.start()
        rig.fake.say(.finish(error: "the stream key was refused"))
        let status = try await rig.session.waitUntilFinished()
        #expect(status.state == .failed)
        #expect(status.lastError == "the extension ended the broadcast: the stream key was refused")
        #expect(rig.fake.received.contains(.finished))
        #expect(!rig.fake.snapshot.killed, "it exited by itself on finished")
        rig.expectNothingLeft()
    }

    /// The grace is the session's clock's: killed once it has passed, not a moment before.
    @Test func anExtensionThatEndsWithAnErrorAndStaysIsKilledAfterTheGrace() async throws {
        var timing = BroadcastSessionTests.patient
        timing.finishGrace = 5
        let timers = ManualTimers()
        let rig = Rig(.init(exitsOnFinished: false), timing: timing, timers: timers)
        try await rig.start()
        rig.fake.say(.finish(error: "the stream key was refused"))
        // Its watchdog and its grace wait on the clock.
        await eventually("the grace is counting") { rig.fake.received.contains(.finished) && timers.pending == 2 }
        timers.advance(by: 4.9)
        #expect(!rig.fake.snapshot.killed, "killed before its grace had passed")
        timers.advance(by: 0.2)
        #expect(rig.fake.snapshot.killed, "an extension that gave up is not left running")
        #expect(try await rig.session.waitUntilFinished().state == .failed)
        rig.expectNothingLeft()
    }

    /// A handler that gives up in `broadcastStarted` fails the start itself: the person's
    /// `replay broadcast start` says why instead of reporting a broadcast that is already over.
    @Test func anExtensionThatGivesUpInStartedFailsTheStart() async throws {
        let rig = Rig(.init(refusesStart: "the stream key was refused"))
        let refusal = await #expect(throws: DaemonError.self) { try await rig.start() }
        #expect(refusal?.message == "cannot start the broadcast: the extension ended the broadcast: the stream key was refused")
        #expect(rig.session.status.state == .failed)
        #expect(rig.fake.received.contains(.finished), "it still hears broadcastFinished")
        rig.expectNothingLeft()
    }

    /// What was logged at the end is what `status` says ever after, however capture winds down.
    @Test func theFinalStatusStaysFinal() async throws {
        let rig = Rig()
        try await rig.start()
        rig.session.stop()
        let final = try await rig.session.waitUntilFinished()
        rig.backend.screen.counters.count(delivered: false, repeated: false)
        #expect(rig.session.status.framesDropped == final.framesDropped)
    }

    @Test func aCrashEndsTheBroadcastWithHowItCrashed() async throws {
        let rig = Rig()
        try await rig.start()
        rig.fake.crash()
        let status = try await rig.session.waitUntilFinished()
        #expect(status.state == .failed)
        #expect(status.lastError == "the extension crashed (SIGSEGV) before the broadcast ended")
        rig.expectNothingLeft()
    }

    /// The heartbeat runs on the session's clock: a hung extension is found once the timeout
    /// has passed on it, however slow the machine (a real 0.15 s once ended a healthy one on CI).
    @Test func aHungExtensionIsStoppedByTheHeartbeat() async throws {
        var timing = BroadcastSessionTests.patient
        timing.heartbeatTimeout = 10
        let timers = ManualTimers()
        let rig = Rig(timing: timing, timers: timers)
        try await rig.start()
        // Answered pings keep it alive however long it runs (each second's pongs heard before
        // the clock moves on: the fake answers on a queue of its own).
        for _ in 0..<30 {
            timers.advance(by: 1)
            rig.fake.heardSoFar()
        }
        #expect(rig.fake.received.contains { if case .ping = $0 { true } else { false } })
        #expect(!rig.session.status.isOver, "\(rig.session.status)")
        rig.fake.change { $0.answersPings = false }
        timers.advance(by: 9)
        #expect(!rig.session.status.isOver, "ended before its heartbeat timed out")
        timers.advance(by: 2)
        let status = try await rig.session.waitUntilFinished()
        #expect(status.lastError?.contains("stopped responding") == true)
        #expect(rig.fake.snapshot.killed)
        rig.expectNothingLeft()
    }

    @Test func anExtensionOverItsMemoryLimitIsStopped() async throws {
        let rig = Rig()
        try await rig.start()
        rig.fake.setFootprint(60 << 20)
        let status = try await rig.session.waitUntilFinished()
        #expect(status.lastError?.contains("the extension 'fake' used more than 50 MiB of memory (60 MiB)") == true)
        #expect(status.extensionPeakMemory == 60 << 20)
        rig.expectNothingLeft()
    }

    /// Without Landlock ABI 6 the sandbox still runs, without the scopes, and says why.
    @Test(arguments: [0, 5]) func withoutLandlockScopesExtensionsRunWithAWarning(abi: Int) {
        let scopes = ExtensionProcess.landlockScopes(abi: abi)
        #expect(!scopes.enabled)
        #expect(scopes.warning?.contains("X server") == true)
        #expect(ExtensionProcess.landlockScopes(abi: 6) == (true, nil))
    }

    /// Without Landlock ABI 4 the sandbox still runs, with TCP connects unlimited, and says so.
    @Test(arguments: [0, 3]) func withoutLandlockNetworkRulesExtensionsRunWithAWarning(abi: Int) {
        let rules = ExtensionProcess.landlockConnectRules(abi: abi)
        #expect(!rules.enabled)
        #expect(rules.warning?.contains("not limited") == true)
        #expect(ExtensionProcess.landlockConnectRules(abi: 4) == (true, nil))
    }

    /// The extension is launched allowed to connect to the servers its setup names, no more.
    @Test func theExtensionMayConnectOnlyToThePortsItsSetupNames() async throws {
        let rig = Rig(setup: ["url": "rtmp://127.0.0.1/live", "key": "secret", "bitrate": "2500"])
        try await rig.start()
        #expect(rig.fake.snapshot.network?.connectPorts == [1935])
        rig.session.stop()
        _ = try await rig.session.waitUntilFinished()
        rig.expectNothingLeft()
    }

    /// Only the sized /tmp and /dev/shm are writable; what hides the home directories and the
    /// store turns read-only after the extension's own folders are mounted under it.
    @Test func theSandboxHasSizedScratchSpaceAndDiesWithReplayd() {
        let arguments = ExtensionProcess.sandboxArguments(executable: "/root/ext/x", hidden: ["/var"], writable: ["/root/out"], ownNetwork: false)
        let joined = arguments.joined(separator: " ")
        #expect(joined.contains("--size \(64 << 20) --tmpfs /tmp --size \(64 << 20) --tmpfs /dev/shm"))
        #expect(arguments.contains("--die-with-parent") && arguments.contains("--new-session"))
        let lastMount = arguments.lastIndex { ["--bind", "--ro-bind", "--ro-bind-try"].contains($0) } ?? 0
        let readOnly = arguments.indices.filter { arguments[$0] == "--remount-ro" }.map { arguments[$0 + 1] }
        #expect(readOnly.contains("/dev") && readOnly.contains("/root") && readOnly.contains("/home") && readOnly.contains("/var"))
        #expect(arguments.firstIndex(of: "--remount-ro") ?? 0 > lastMount)
        // /etc is covered, then only what an uploader needs comes back (issue 46: it read /etc/shadow).
        let covered = arguments.indices.filter { arguments[$0] == "--tmpfs" }.map { arguments[$0 + 1] }
        #expect(covered.contains("/etc") && covered.contains("/var") && covered.contains("/mnt"))
        let etcCover = arguments.indices.first { arguments[$0] == "--tmpfs" && arguments[$0 + 1] == "/etc" } ?? .max
        let shown = arguments.indices.filter { arguments[$0] == "--ro-bind-try" }
        #expect(shown.allSatisfy { $0 > etcCover }, "bound after the cover, or hidden by it")
        #expect(shown.map { arguments[$0 + 1] }.allSatisfy { ExtensionProcess.hostConfiguration.contains($0) && !$0.hasPrefix("/etc/ssl/private") })
        #expect(readOnly.contains("/etc"))
        // Debian 12's bubblewrap is 0.8: no user namespace of the extension's own.
        #expect(ExtensionProcess.disablesUserNamespaces && arguments.contains("--disable-userns"))
    }

    /// An install under a home directory keeps the Swift runtime its extensions load beside
    /// its binaries (lib/openreplaykit/swift): the sandbox shows it, read-only, over the cover.
    @Test func theSandboxShowsTheSharedSwiftRuntime() throws {
        let runtime = "/home/someone/.local/lib/openreplaykit/swift"
        let arguments = ExtensionProcess.sandboxArguments(executable: "/home/someone/.local/share/openreplaykit/extensions/x",
                                                          hidden: [], writable: [], ownNetwork: false, runtime: runtime)
        let bound = arguments.indices.first { arguments[$0] == "--ro-bind" && arguments[$0 + 1] == runtime && arguments[$0 + 2] == runtime }
        let cover = arguments.indices.first { arguments[$0] == "--tmpfs" && arguments[$0 + 1] == "/home" }
        #expect(bound != nil && cover != nil && bound! > cover!, "bound after /home is covered, or hidden by it")
        let staticBuild = ExtensionProcess.sandboxArguments(executable: "/usr/lib/x/ext", hidden: [], writable: [], ownNetwork: false, runtime: nil)
        #expect(staticBuild.filter { $0 == "--ro-bind" }.count == 2, "only / and the extension's folder")
        #expect(SwiftRuntimeFolder.folder(inMaps: "55d0c0a00000-55d0c0b00000 r-xp 00000000 08:01 42    /usr/bin/replayd\n") == nil)
        // The tests run on the toolchain's runtime, as shared libraries.
        let loaded = try #require(SwiftRuntimeFolder.loaded)
        #expect(FileManager.default.fileExists(atPath: loaded + "/libswiftCore.so"))
    }

    @Test func aMalformedMessageEndsOnlyThisBroadcast() async throws {
        let rig = Rig()
        try await rig.start()
        rig.fake.sayBytes([4, 0, 0, 0, 99, 1, 2, 3])
        let status = try await rig.session.waitUntilFinished()
        #expect(status.lastError?.contains("malformed message") == true)
        #expect(rig.fake.snapshot.killed)
        rig.expectNothingLeft()
    }

    /// Its readiness time is counted on the session's clock, then the start fails.
    @Test func anExtensionThatNeverGetsReadyFailsTheStart() async throws {
        var timing = BroadcastSessionTests.patient
        timing.ready = 10
        let timers = ManualTimers()
        let rig = Rig(.init(getsReady: false), timing: timing, timers: timers)
        let started = rig.beginStart()
        await eventually("the extension launched") { rig.fake.snapshot.listenerInstalled && timers.pending == 2 }
        timers.advance(by: 9.9)
        #expect(started.value == nil, "the start gave up before the readiness time")
        timers.advance(by: 0.2)
        // Failed, then the grace after a failure passes and the extension is killed.
        await eventually("the start failed") { rig.session.status.isOver }
        timers.advance(by: 1)
        #expect(try await started.value("the start's outcome")?.message.contains("did not get ready within 10 seconds") == true)
        let status = try await rig.session.waitUntilFinished()
        #expect(status.lastError?.contains("did not get ready") == true)
        rig.expectNothingLeft()
    }

    @Test func aStopDuringTheStartEndsItCleanly() async throws {
        let rig = Rig(.init(getsReady: false))
        let session = rig.session
        let started = rig.beginStart()
        await eventually("the extension launched") { rig.fake.snapshot.listenerInstalled }
        session.stop()
        session.stop()
        #expect(try await started.value("the start's outcome")?.message.contains("was stopped before it was ready") == true)
        #expect(try await session.waitUntilFinished().state == .finished)
        rig.expectNothingLeft()
    }

    @Test func pausedBroadcastsSendNoSamplesAndResumeWhereTheyWere() async throws {
        let rig = Rig()
        try await rig.start()
        rig.clock.set(100.5)
        rig.session.pause()
        rig.session.pause()
        #expect(rig.session.status.state == .paused)
        for index in 0..<5 { rig.backend.screen.send(.frame(at: 100.5 + Double(index) / 30)) }
        rig.clock.set(100.9)
        rig.session.resume()
        rig.backend.screen.send(.frame(at: 101))
        await eventually("a picture sent after the resume") { rig.fake.received.contains { if case .video = $0 { true } else { false } } }
        rig.session.stop()
        _ = try await rig.session.waitUntilFinished()
        let messages = rig.fake.received
        #expect(messages.filter { $0 == .paused }.count == 1, "a second pause says nothing")
        #expect(messages.contains(.resumed))
        let videoTimes = messages.compactMap { message -> Int64? in if case .video(let frame) = message { frame.time } else { nil } }
        #expect(videoTimes.allSatisfy { $0 >= MediaTime(seconds: 101).nanoseconds }, "nothing captured while paused was sent")
    }

    @Test func aResizedScreenIsFittedIntoTheBroadcastsSizeAndItGoesOn() async throws {
        let rig = Rig()
        try await rig.start()
        // Larger than the shared surfaces, then back: the extension sees the broadcast's size throughout.
        rig.backend.screen.send(.resize(width: 1280, height: 720))
        for index in 0..<3 { rig.backend.screen.send(.frame(at: 100 + Double(index) / 30)) }
        rig.backend.screen.send(.resize(width: 64, height: 48))
        rig.backend.screen.send(.frame(at: 100.2))
        func sizes() -> [String] {
            rig.fake.received.compactMap { message in if case .video(let frame) = message { "\(frame.width)x\(frame.height)" } else { nil } }
        }
        await eventually("four pictures sent") { sizes().count == 4 }
        #expect(sizes() == Array(repeating: "64x48", count: 4))
        #expect(rig.session.status.state == .live)
        #expect(rig.session.status.framesDropped == 0)
        rig.session.stop()
        #expect(try await rig.session.waitUntilFinished().lastError == nil)
        rig.expectNothingLeft()
    }

    /// Protocol 1.1: an extension that announces it learns which pictures repeat the last and
    /// how many frames were dropped so far; one that does not (1.0) gets 1.0 messages, which
    /// its decoder takes.
    @Test(arguments: [UInt16?.none, 1, 9])
    func repeatsAndDropsReachAnExtensionThatSpeaksOnePointOne(minorVersion: UInt16?) async throws {
        let rig = Rig(.init(minorVersion: minorVersion))
        try await rig.start()
        func frames() -> [BroadcastMessage.VideoFrame] {
            rig.fake.received.compactMap { message in if case .video(let frame) = message { frame } else { nil } }
        }
        rig.backend.screen.send(.frame(at: 100))
        await eventually("a picture sent") { frames().count == 1 }
        rig.backend.screen.send(.drop(3))
        rig.backend.screen.send(.repeatedFrame(at: 100.25))
        await eventually("two pictures sent") { frames().count == 2 }
        rig.session.stop()
        #expect(try await rig.session.waitUntilFinished().framesDropped == 3)
        if minorVersion == nil {
            #expect(frames().allSatisfy { $0.additions == nil })
        } else {
            #expect(frames().map(\.additions) == [.init(isRepeat: false, framesDropped: 0), .init(isRepeat: true, framesDropped: 3)])
        }
    }

    /// Issue 46, item 3: an extension that keeps all four picture surfaces gets no picture to
    /// carry the drops that follow. They are counted all the same, in the status, and a 1.2
    /// extension hears them at once, while it still holds every surface.
    @Test(arguments: [UInt16?.none, 1, 2])
    func dropsWhileTheExtensionHoldsEverySurfaceAreCountedAndTold(minorVersion: UInt16?) async throws {
        let rig = Rig(.init(minorVersion: minorVersion, keepsPictures: true))
        try await rig.start()
        for index in 0..<BroadcastCaptureOpened.videoSurfaces { rig.backend.screen.send(.frame(at: 100 + Double(index) / 30)) }
        func told() -> [UInt32] { rig.fake.received.compactMap { if case .dropped(let total) = $0 { total } else { nil } } }
        await eventually("every surface lent") {
            rig.fake.received.filter { if case .video = $0 { true } else { false } }.count == BroadcastCaptureOpened.videoSurfaces
        }
        rig.backend.screen.send(.drop(5))
        await eventually("the drops counted") { rig.session.status.framesDropped == 5 }
        if minorVersion == 2 {
            await eventually("the drops told") { told().last == 5 }
        } else {
            rig.fake.heardSoFar()
            #expect(told().isEmpty, "a \(minorVersion.map { "1.\($0)" } ?? "1.0") extension does not know `dropped`")
        }
        rig.session.stop()
        #expect(try await rig.session.waitUntilFinished().framesDropped == 5)
    }

    /// The watchdog's words for the memory limit, in MiB as the limit is (54,386,688 bytes
    /// were once reported as "51 MB").
    @Test func theMemoryLimitIsToldInMebibytes() async throws {
        let rig = Rig()
        try await rig.start()
        rig.fake.setFootprint(54_386_688)
        let status = try await rig.session.waitUntilFinished()
        #expect(status.lastError == "the extension 'fake' used more than 50 MiB of memory (51.9 MiB) and was stopped")
        rig.expectNothingLeft()
    }

    @Test func aScreenThatCannotBeOpenedLaunchesNoExtension() async throws {
        let rig = Rig()
        rig.backend.refuseScreen(CaptureError(.noDisplay, "cannot open display :42"))
        await #expect(throws: DaemonError.self) { try await rig.start() }
        #expect(rig.fake.snapshot.launches == 0)
        #expect(try await rig.session.waitUntilFinished().lastError == "cannot open display :42")
    }
}

extension FakeExtension.State {
    var listenerInstalled: Bool { listener != nil }
}
