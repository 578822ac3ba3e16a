import Foundation
import Logging
import ReplayCapture
@testable import ReplayDaemon
import ReplayIPC
import ReplayLoopbackServer
import ReplayMedia
@testable import ReplaySession
import ReplaySystem
import Synchronization
import Testing

/// Who may do what, through a real `ClientConnection` of a `Daemon` whose sessions are built
/// from fakes (no display, no audio server, no encoder): the person's tools, an app with and
/// without consent. Each request goes in as the bytes a client sends; each answer is read as
/// the client reads it.
@Suite struct ClientConnectionRulesTests {
    /// A daemon on fakes, and connections to it in either role.
    final class Rig: Sendable {
        let directory: URL
        let daemon: Daemon
        let backend = FakeCaptureBackend()
        /// Every client's request stream: finished at clean-up, as a client hangs up.
        private let clients = Mutex<[AsyncThrowingStream<[UInt8], any Error>.Continuation]>([])

        /// - Parameter launcher: runs recordings in (scripted) capture processes instead of replayd.
        /// - Parameter extensions: manifests installed (beside a stand-in executable) where the daemon looks.
        init(policy: ConsentPolicy = .askEveryone, consentTimeout: Duration = .seconds(120),
             launcher: (any CaptureProcessLauncher)? = nil, extensions: [ExtensionManifest] = []) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("rules-\(UUID().uuidString.prefix(8))")
            let extensionsDirectory = directory.appendingPathComponent("extensions")
            try FileManager.default.createDirectory(at: extensionsDirectory, withIntermediateDirectories: true)
            for manifest in extensions {
                try JSONEncoder().encode(manifest).write(to: extensionsDirectory.appendingPathComponent("\(manifest.id).json"))
                let executable = extensionsDirectory.appendingPathComponent(manifest.executable)
                _ = FileManager.default.createFile(atPath: executable.path, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
            }
            var configuration = Daemon.Configuration(
                socketPath: directory.appendingPathComponent("replayd.sock").path, store: directory.appendingPathComponent("store"),
                displayName: nil, consent: ConsentBroker.Settings(policy: policy, timeout: consentTimeout), pagesPort: nil)
            // Sessions in scripted capture processes when a launcher is given, else in this process.
            configuration.parts = if let launcher {
                SessionParts(desktop: backend, captures: CaptureProcesses(launcher: launcher), extensions: FakeExtension(), clock: ManualClock())
            } else {
                SessionParts(capture: backend, movies: FakeMovieSink(), extensions: FakeExtension(), clock: ManualClock())
            }
            configuration.notifications = false
            configuration.extensionDirectories = [extensionsDirectory]
            daemon = try Daemon(configuration: configuration, logger: Logger(label: "test"))
        }

        /// A client that has said hello, as `role`.
        func connect(as role: ClientConnection.Role) throws -> Client {
            let (outbox, client) = try socketPair()
            let peer = try client.peer(executableOf: { _ in "/usr/bin/some-app" })
            let connection = ClientConnection(daemon: daemon, channel: outbox, number: Int.random(in: 1...1_000_000), peer: peer, role: role)
            let (requests, sender) = AsyncThrowingStream.makeStream(of: [UInt8].self)
            // Served on dispatch's threads, beside tests that block the cooperative pool's few
            // threads waiting for an answer.
            Task(executorPreference: DispatchTaskExecutor.shared) { await connection.serve(requests) }
            clients.withLock { $0.append(sender) }
            let connected = Client(connection: connection, requests: sender, channel: client)
            guard case .welcome = try connected.ask(.hello(protocolVersion: ClientProtocol.version, client: "test")) else {
                throw Failure(description: "no welcome")
            }
            return connected
        }

        func cleanUp() {
            for client in clients.withLock({ $0 }) { client.finish() }
            // Waited for from a test's thread, which is the cooperative pool's: the shutdown
            // runs on dispatch's threads, so tests waiting at once cannot starve it.
            let daemon = self.daemon, done = DispatchSemaphore(value: 0)
            Task(executorPreference: DispatchTaskExecutor.shared) {
                await daemon.shutdown()
                done.signal()
            }
            done.wait()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// One client: its requests are handed to the connection's task as received frames.
    struct Client {
        let connection: ClientConnection
        let requests: AsyncThrowingStream<[UInt8], any Error>.Continuation
        let channel: MessageChannel

        /// Sends `request` without waiting for its answer.
        func send(_ request: ClientRequest) throws {
            send(bytes: [UInt8](try JSONEncoder().encode(request)))
        }

        func send(bytes: [UInt8]) {
            requests.yield(bytes)
        }

        /// The next event the daemon sends after `request`.
        func ask(_ request: ClientRequest) throws -> DaemonEvent {
            try send(request)
            return try next()
        }

        func next() throws -> DaemonEvent {
            guard let (event, _) = try channel.receive(DaemonEvent.self) else { throw Failure(description: "the connection closed") }
            return event
        }

        /// Sends `request` (none: only listens), then the summary of the next recording to finish.
        func summary(after request: ClientRequest? = nil) throws -> RecordingSummary {
            if let request { try send(request) }
            while true {
                if case .recordingFinished(let summary) = try next() { return summary }
            }
        }

        /// The error code of `event`, if it is an error.
        static func code(_ event: DaemonEvent) -> ErrorCode? {
            if case .error(let code, _) = event { code } else { nil }
        }

        /// The message of `event`, if it is an error; "" otherwise.
        static func message(_ event: DaemonEvent) -> String {
            if case .error(_, let message) = event { message } else { "" }
        }
    }

    @Test func anAppMayNeitherReadTheStoreNorSpeakForThePerson() throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        let app = try rig.connect(as: .app)
        let refused: [ClientRequest] = [
            .listRecordings, .exportRecording(id: "rec-1"), .deleteRecording(id: "rec-1"), .previewURL(id: "rec-1"),
            .registerConsentAgent, .forgetScreenChoice, .listSources,
        ]
        for request in refused {
            let answer = try app.ask(request)
            #expect(Client.code(answer) == .notPermitted, "\(request) → \(answer)")
        }
        // Refusals leave the connection open: the app is still served.
        guard case .status(let status) = try app.ask(.status) else { Issue.record("no status"); return }
        #expect(status.store == nil && status.pagesURL == nil && status.activeRecordings.isEmpty, "an app learns no path: \(status)")
        // Answering for the person without being an agent is a protocol violation: refused and cut off.
        #expect(Client.code(try app.ask(.answerConsent(requestID: "1", allow: true))) == .outOfOrder)
        #expect(try app.channel.receive(DaemonEvent.self) == nil, "the connection is closed")
    }

    /// An app may fill in the picker's settings for the extension it prefers (a call's server
    /// and room), but never a secret, a setting the extension does not have, or settings for
    /// no extension in particular.
    @Test func anAppFillsInThePickerButNeverASecret() throws {
        let videoroom = ExtensionManifest(id: "videoroom", displayName: "Video call", executable: "replay-videoroom-extension", setupFields: [
            .init(key: "url", label: "Server", kind: .text, required: true), .init(key: "room", label: "Room", kind: .text, required: true),
            .init(key: "pin", label: "Pin", kind: .secret, required: false),
        ])
        let rig = try Rig(extensions: [videoroom])
        defer { rig.cleanUp() }
        let app = try rig.connect(as: .app)
        func ask(_ preferred: String?, _ setup: [String: String]) throws -> DaemonEvent {
            try app.ask(.showBroadcastPicker(preferredExtension: preferred, microphone: false, scope: .app, setup: setup))
        }
        let secret = try ask("videoroom", ["url": "http://127.0.0.1:8088/janus", "pin": "1234"])
        #expect(Client.code(secret) == .notPermitted && Client.message(secret).contains("'pin' is a secret"), "\(secret)")
        let unknown = try ask("videoroom", ["colour": "red"])
        #expect(Client.code(unknown) == .malformedRequest && Client.message(unknown).contains("no setting 'colour'"), "\(unknown)")
        let nobody = try ask(nil, ["url": "http://127.0.0.1:8088/janus"])
        #expect(Client.code(nobody) == .malformedRequest && Client.message(nobody).contains("needs the extension"), "\(nobody)")
        let twoLines = try ask("videoroom", ["room": "1\n2"])
        #expect(Client.code(twoLines) == .malformedRequest, "\(twoLines)")
        // Settings it has: accepted, and the picker goes on to its page (which this daemon, run
        // without pages, cannot serve: the refusal is about that, not the settings).
        let fine = try ask("videoroom", ["url": "http://127.0.0.1:8088/janus", "room": "1234"])
        #expect(Client.code(fine) == .failedToShowPreview, "\(fine)")
    }

    @Test func thePersonReadsTheStoreAndSeesWhereItIs() throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        let person = try rig.connect(as: .person)
        #expect(try person.ask(.listRecordings) == .recordings(list: []))
        guard case .status(let status) = try person.ask(.status) else { Issue.record("no status"); return }
        #expect(status.store == rig.daemon.store.directory.path)
        #expect(Client.code(try person.ask(.deleteRecording(id: "rec-nope"))) == .notFound)
    }

    /// An app records only with the person's consent; the person's own tools need none.
    @Test func anAppRecordsOnlyWithConsent() throws {
        let denied = try Rig(policy: ConsentPolicy(default: .deny))
        defer { denied.cleanUp() }
        let app = try denied.connect(as: .app)
        let refusal = try app.ask(.startRecording(options: RecordingOptions(appAudio: false)))
        #expect(Client.code(refusal) == .userDeclined, "\(refusal)")
        #expect(denied.daemon.activeRecordings.isEmpty)

        let allowed = try Rig(policy: ConsentPolicy(default: .allow))
        defer { allowed.cleanUp() }
        let allowedApp = try allowed.connect(as: .app)
        guard case .recordingStarted(let started) = try allowedApp.ask(.startRecording(options: RecordingOptions(appAudio: false))) else {
            Issue.record("the allowed app's recording did not start")
            return
        }
        #expect(allowed.daemon.activeRecordings == [started.id])

        let person = try denied.connect(as: .person)
        guard case .recordingStarted = try person.ask(.startRecording(options: RecordingOptions(appAudio: false))) else {
            Issue.record("the person's recording did not start under a policy that denies apps")
            return
        }
    }

    /// While the person is asked, the app's later requests wait their turn (answered after
    /// its recording has started), and the daemon serves everyone else meanwhile.
    @Test func anAppWaitingForTheAnswerHoldsItsLaterRequestsOnly() throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        let agent = try rig.connect(as: .person)
        #expect(try agent.ask(.registerConsentAgent) == .consentAgentRegistered)
        let app = try rig.connect(as: .app)
        for request in [ClientRequest.startRecording(options: RecordingOptions(appAudio: false)), .status] {
            try app.send(request)
        }
        #expect(try app.next() == .waitingForConsent)
        guard case .consentRequested(let prompt) = try agent.next() else { throw Failure(description: "the agent was not asked") }
        // Served while the app waits: another client, and the agent itself.
        let other = try rig.connect(as: .person)
        #expect(try other.ask(.listRecordings) == .recordings(list: []))
        #expect(rig.daemon.activeRecordings.isEmpty)
        _ = try agent.ask(.answerConsent(requestID: prompt.requestID, allow: true))
        guard case .recordingStarted(let started) = try app.next() else { throw Failure(description: "the recording did not start") }
        guard case .status = try app.next() else { throw Failure(description: "the request held was not answered after it") }
        #expect(rig.daemon.activeRecordings == [started.id])
    }

    /// While a recording waits for its capture process to start (the person choosing a screen
    /// in the portal's dialog), its connection's later requests wait their turn and everyone
    /// else is served; once it starts they are answered, after it.
    @Test func aRecordingWaitingForItsScreenHoldsItsOwnConnectionOnly() throws {
        let chosen = Completion<Void>()
        let launcher = ScriptedCaptureLauncher(script: CaptureProcessRecordingTests.wellBehaved(after: chosen))
        let rig = try Rig(launcher: launcher)
        defer { rig.cleanUp() }
        let person = try rig.connect(as: .person)
        for request in [ClientRequest.startRecording(options: RecordingOptions(appAudio: false)), .listRecordings] {
            try person.send(request)
        }
        let other = try rig.connect(as: .person)
        guard case .status(let status) = try other.ask(.status) else { throw Failure(description: "the other client was not served") }
        #expect(status.activeRecordings.count == 1, "the starting recording is the daemon's already")
        chosen.complete(())
        guard case .recordingStarted(let started) = try person.next() else { throw Failure(description: "the recording did not start") }
        guard case .recordings = try person.next() else { throw Failure(description: "the request held was not answered after it") }
        #expect(rig.daemon.activeRecordings == [started.id])
        let finished = try person.summary(after: .stopRecording)
        #expect(finished.error == nil, "\(finished)")
    }

    /// A capture process killed while its start is awaited: the client hears which signal,
    /// its requests held meanwhile are served after, and the daemon holds nothing of it.
    @Test func aCaptureProcessKilledWhileStartingFailsThatStartAlone() throws {
        let launcher = ScriptedCaptureLauncher { channel, process in
            _ = CaptureProcessRecordingTests.awaitStart(channel)
            process.signal(SIGKILL)
        }
        let rig = try Rig(launcher: launcher)
        defer { rig.cleanUp() }
        let person = try rig.connect(as: .person)
        for request in [ClientRequest.startRecording(options: RecordingOptions(appAudio: false)), .listRecordings] {
            try person.send(request)
        }
        guard case .error(let code, let message) = try person.next() else { throw Failure(description: "the start did not fail") }
        #expect(code == .captureFailed && message.contains("SIGKILL") && message.hasSuffix("while starting"), "\(message)")
        #expect(try person.next() == .recordings(list: []), "the request held is answered, and no movie is kept")
        #expect(rig.daemon.activeRecordings.isEmpty)
    }

    /// An app pauses, stops and discards only what its own connection started; picking a
    /// window by click is the person's.
    @Test func anAppControlsOnlyItsOwnRecording() throws {
        let rig = try Rig(policy: ConsentPolicy(default: .allow))
        defer { rig.cleanUp() }
        let person = try rig.connect(as: .person)
        guard case .recordingStarted(let persons) = try person.ask(.startRecording(options: RecordingOptions(appAudio: false))) else {
            Issue.record("the person's recording did not start")
            return
        }
        let app = try rig.connect(as: .app)
        #expect(Client.code(try app.ask(.pauseRecording(id: persons.id))) == .notPermitted)
        #expect(Client.code(try app.ask(.discardRecording(id: persons.id))) == .notPermitted)
        let pick = RecordingOptions(appAudio: false, area: .pickWindow(seconds: 10))
        #expect(Client.code(try app.ask(.startRecording(options: pick))) == .notPermitted)
        // The person may pause any running recording.
        #expect(try person.ask(.pauseRecording(id: persons.id)) == .recordingPaused(id: persons.id))
        #expect(rig.daemon.pausedRecordings == [persons.id])
    }

    /// Bytes that are no request end the connection with a reason; the daemon serves on.
    @Test func aMalformedRequestIsRefusedAndClosesItsConnectionOnly() throws {
        let rig = try Rig()
        defer { rig.cleanUp() }
        let app = try rig.connect(as: .app)
        app.send(bytes: Array("{\"startRecording\":{\"options\":42}}".utf8))
        #expect(Client.code(try app.next()) == .malformedRequest)
        #expect(try app.channel.receive(DaemonEvent.self) == nil, "the connection is closed")
        let other = try rig.connect(as: .person)
        #expect(try other.ask(.listRecordings) == .recordings(list: []))
    }

    /// A capture process that crashes after its start: its client hears the signal, and the
    /// daemon frees its place, so the next recording starts (in a process that behaves).
    @Test func aCrashedCaptureProcessFreesItsPlaceAndTellsItsClient() throws {
        let launches = Mutex(0)
        let launcher = ScriptedCaptureLauncher { channel, process in
            guard let plan = CaptureProcessRecordingTests.awaitStart(channel) else { return }
            let first = launches.withLock { count -> Bool in
                count += 1
                return count == 1
            }
            guard first else { return CaptureProcessRecordingTests.runUntilStopped(plan, channel, process) }
            try? channel.send(CaptureProcessRecordingTests.status(.running))
            try? channel.send(CaptureReport.started(RecordingStarted(id: plan.id, width: 64, height: 48, warnings: [])))
            process.signal(SIGSEGV)
        }
        let rig = try Rig(launcher: launcher)
        defer { rig.cleanUp() }
        let person = try rig.connect(as: .person)
        guard case .recordingStarted = try person.ask(.startRecording(options: RecordingOptions(appAudio: false))) else {
            throw Failure(description: "the first recording did not start")
        }
        let crashed = try person.summary()
        #expect(crashed.error == "the capture process was ended by SIGSEGV (Segmentation fault)", "\(crashed)")
        #expect(rig.daemon.activeRecordings.isEmpty)

        guard case .recordingStarted(let second) = try person.ask(.startRecording(options: RecordingOptions(appAudio: false))) else {
            throw Failure(description: "no second recording after the crash")
        }
        #expect(rig.daemon.activeRecordings == [second.id])
        let finished = try person.summary(after: .stopRecording)
        #expect(finished.error == nil && finished.frames == 30, "\(finished)")
        #expect(launches.withLock { $0 } == 2)
    }
}
