import Foundation
import ReplayCaptureModel
@testable import ReplayDaemon
import ReplaySystem
import Testing

/// Who counts as the person: their own replay, unmodified, in the daemon's namespaces.
@Suite struct PersonCheckTests {
    let replay = "/proc/self/exe"
    var check: PersonCheck { PersonCheck(ownerUID: 1000, trustedExecutables: [replay]) }
    var genuine: ProcessFacts {
        ProcessFacts(executable: replay, executableFile: FileIdentity(path: replay), sharesNamespaces: true,
                     loaderVariables: [], isTraced: false)
    }

    @Test func theOwnersUnmodifiedReplayIsThePerson() {
        #expect(check.verdict(uid: 1000, facts: genuine) == .person)
    }

    @Test func anotherUserOrAnotherProgramIsAnAppWithoutComment() {
        #expect(check.verdict(uid: 1001, facts: genuine) == .app(mistrusted: nil))
        var other = genuine
        other.executable = "/usr/bin/python3"
        #expect(check.verdict(uid: 1000, facts: other) == .app(mistrusted: nil))
        #expect(check.verdict(uid: 1000, facts: nil) == .app(mistrusted: nil))
    }

    @Test func replaysPathInAnotherNamespaceIsMistrusted() {
        var sandboxed = genuine
        sandboxed.sharesNamespaces = false
        #expect(check.verdict(uid: 1000, facts: sandboxed).mistrust?.contains("namespace") == true)
    }

    /// An app outside the daemon's namespaces is named by its file, never by a path it could
    /// have bound anything over: a consent policy naming that path does not match it.
    @Test func anAppInANamespaceOfItsOwnIsNamedByWhatItIs() throws {
        var app = genuine
        app.executable = "/usr/bin/obs"
        #expect(Daemon.executableName(of: app) == "/usr/bin/obs")
        app.sharesNamespaces = false
        let file = try #require(app.executableFile)
        let name = try #require(Daemon.executableName(of: app))
        #expect(name == "/usr/bin/obs [in a namespace of its own: device \(file.device) inode \(file.inode)]")
        let policy = ConsentPolicy(default: .deny, apps: ["/usr/bin/obs": .allow])
        #expect(policy.answer(for: "/usr/bin/obs") == .allow)
        #expect(policy.answer(for: name) == .deny)
        #expect(Daemon.applicationName(executable: name) == "obs [in a namespace of its own: device \(file.device) inode \(file.inode)]")
    }

    @Test func anotherFileAtReplaysPathIsMistrusted() {
        var impostor = genuine
        impostor.executableFile = FileIdentity(path: "/bin/sh")
        #expect(check.verdict(uid: 1000, facts: impostor).mistrust?.contains("not the file installed") == true)
        impostor.executableFile = nil
        #expect(check.verdict(uid: 1000, facts: impostor).mistrust != nil)
    }

    @Test func loaderVariablesAndDebuggersAreMistrusted() {
        var preloaded = genuine
        preloaded.loaderVariables = ["LD_PRELOAD"]
        #expect(check.verdict(uid: 1000, facts: preloaded).mistrust?.contains("LD_PRELOAD") == true)
        var traced = genuine
        traced.isTraced = true
        #expect(check.verdict(uid: 1000, facts: traced).mistrust?.contains("debugger") == true)
    }

    @Test func thisProcessReadsAsGenuineAndItsLoaderVariablesAreSeen() throws {
        let facts = try #require(ProcessFacts.read(pid: getpid()))
        #expect(facts.sharesNamespaces)
        #expect(facts.executableFile == FileIdentity(path: "/proc/self/exe"))
        // The variables a process started with, not ones it set later.
        #expect(facts.loaderVariables == ProcessFacts.loaderVariableNames.filter {
            !(ProcessInfo.processInfo.environment[$0] ?? "").isEmpty
        })
        #expect(ProcessFacts.read(pid: -1) == nil)
    }
}

private extension PersonCheck.Verdict {
    var mistrust: String? { if case .app(let why) = self { why } else { nil } }
}
