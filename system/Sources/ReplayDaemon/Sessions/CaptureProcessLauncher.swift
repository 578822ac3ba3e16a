import Dispatch
import FoundationEssentials
import ReplayCaptureModel
import ReplayDesktop
import ReplayIPC
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Starts the process that runs one recording: the real one starts `replay-capture`; a
/// unit test can hand back a process of its own making.
protocol CaptureProcessLauncher: Sendable {
    /// What its processes' waits are timed by (a process's end, a remux that hangs).
    var timers: any Timers { get }
    /// A running process and replayd's end of its channel.
    func launch(id: String) throws -> (CaptureProcessHandle, CaptureChannel)
    /// Copies the movie at `input` into `job`'s container at `output` (an export), only its
    /// span if it has one, in a process of its own, then calls `done` with nil or why it could
    /// not; no thread waits meanwhile.
    func remux(_ input: String, to output: String, _ job: RemuxJob, then done: @escaping @Sendable (DaemonError?) -> Void)
}

/// A capture process as replayd holds it.
struct CaptureProcessHandle: Sendable {
    let pid: Int32
    private let process: ChildProcess
    private let timers: any Timers

    init(_ process: ChildProcess, timers: any Timers) {
        pid = process.pid
        self.process = process
        self.timers = timers
    }

    /// Reaps it once it exits (the one reaper: a second `waitpid` would race it for the
    /// status), then calls `handler` with the status.
    func onExit(_ handler: @escaping @Sendable (Int32) -> Void) {
        let exited = self.exited
        process.onExit { status in
            exited.complete(status)
            handler(status)
        }
    }

    private let exited = Completion<Int32>()

    func kill() { process.signal(SIGKILL) }

    /// Runs `handler` with how it ended once `onExit` has reaped it (it is ending: it said so,
    /// or closed its channel); one that has not ended within 5 s is killed. No thread waits.
    func whenExited(_ handler: @escaping @Sendable (String) -> Void) {
        let exited = self.exited
        exited.onComplete(within: 5, on: timers) { status in
            if let status { return handler(Self.describe(status: status)) }
            kill()
            exited.onComplete { handler(Self.describe(status: $0)) }
        }
    }

    /// A start that failed because the process ended first; `how` as `describe` says it.
    static func endedWhileStarting(_ how: String) -> DaemonError {
        DaemonError(code: .captureFailed, message: "the capture process \(how) while starting")
    }

    /// "exited with status 1", "was ended by SIGSEGV (Segmentation fault)" for `ChildProcess`'s status.
    static func describe(status: Int32) -> String {
        guard let signal = ChildProcess.signalName(ofStatus: status) else { return "exited with status \(status)" }
        let said = strsignal(status - 128).map { String(cString: $0) } ?? signal
        return "was ended by \(signal) (\(said))"
    }
}

/// `replay-capture`, beside replayd's own executable, started confined: no new privileges,
/// the seccomp filter extensions get against reading other processes, and where Landlock can,
/// no TCP connection at all and no file beneath `hidden` (the store, replayd's own state):
/// its movie is the one descriptor it gets, and it writes no file by path but beneath /dev
/// (its devices, and POSIX shared memory). It is handed its channel as descriptor 3 and
/// nothing else.
struct ReplayCaptureLauncher: CaptureProcessLauncher {
    let executable: String
    /// The daemon's own log level: the process logs into the same log, at the same level.
    var logLevel = "info"
    /// Folders the process may not open anything beneath.
    var hidden: [String] = []
    var timers: any Timers = DispatchTimers()

    /// What the process may open by path: everything but `hidden`, read-only but /dev.
    var files: FileAccess? { hidden.isEmpty ? nil : .everything(except: hidden, writable: ["/dev"]) }

    /// `replay-capture` beside this process's executable (a build tree), or in
    /// `../lib/openreplaykit` from it (installed: /usr/bin/replayd, /usr/lib/openreplaykit).
    static func besideOwnExecutable() -> ReplayCaptureLauncher? {
        guard let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let folder = URL(fileURLWithPath: own).deletingLastPathComponent()
        let candidates = [folder.appendingPathComponent("replay-capture"),
                          folder.deletingLastPathComponent().appendingPathComponent("lib/openreplaykit/replay-capture")]
        return candidates.first { access($0.path, X_OK) == 0 }.map { ReplayCaptureLauncher(executable: $0.path) }
    }

    /// `replay-capture ARGUMENTS`, confined, with `inheriting` as its only descriptors past
    /// standard error. Swift's backtracer is off in it: it catches SIGSEGV to print a crash
    /// report by reading the process's memory, which the confinement forbids, so it would hang
    /// there, and its session with it; without it a crash ends the process at once.
    /// A hidden file that it reads (`reading`) or writes (`writing`) by a name of its
    /// descriptor, as FFmpeg's demuxer opens /proc/self/fd/3, is opened to it alone.
    private func spawn(_ arguments: [String], stderr: Int32, inheriting: [(Int32, Int32)],
                       reading: [String] = [], writing: [String] = []) throws(SystemError) -> ChildProcess {
        let environment = ChildProcess.environment(adding: ["SWIFT_BACKTRACE": "enable=no", "REPLAY_CAPTURE_LOG_LEVEL": logLevel])
        var files = self.files
        files?.readable += reading
        files?.writable += writing
        return try ChildProcess(confinedPath: executable, arguments: arguments, environment: environment, landlockScopes: false,
                                tcpConnectPorts: ChildProcess.landlockABI >= 4 ? [] : nil, files: files, stderr: .descriptor(stderr),
                                inheriting: inheriting)
    }

    func remux(_ input: String, to output: String, _ job: RemuxJob, then done: @escaping @Sendable (DaemonError?) -> Void) {
        let source = open(input, O_RDONLY | O_CLOEXEC)
        let target = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer {  // the process has its own copies
            if source >= 0 { close(source) }
            if target >= 0 { close(target) }
        }
        guard source >= 0, target >= 0 else {
            return done(DaemonError(code: .internalError, message: "cannot open the export's files: \(String(cString: strerror(errno)))"))
        }
        let errors: (read: Int32, write: Int32)
        let child: ChildProcess
        do {
            errors = try Pipe.make()
            do {
                defer { close(errors.write) }
                child = try spawn(job.arguments, stderr: errors.write, inheriting: [(source, 3), (target, 4)],
                                  reading: [input], writing: [output])
            } catch {
                close(errors.read)
                throw error
            }
        } catch {
            return done(DaemonError(code: .internalError, message: "cannot start the remux process: \(error)"))
        }
        // A remux reads the file once (a trim twice, and encodes a second at most unless its
        // movie cannot be spliced): minutes only for hours of movie. One that hangs is ended.
        timers.after(3600) { child.signal(SIGKILL) }
        child.onExit { status in
            guard status != 0 else {
                close(errors.read)
                return done(nil)
            }
            // What it said is in the pipe by now: one line.
            Pipe.readLine(errors.read, within: 1, on: timers) { said in
                close(errors.read)
                done(DaemonError(code: .internalError, message: said ?? "the remux process \(CaptureProcessHandle.describe(status: status))"))
            }
        }
    }

    func launch(id: String) throws -> (CaptureProcessHandle, CaptureChannel) {
        let (ours, theirs) = try CaptureChannel.pair()
        defer { theirs.close() }
        do {
            let child = try spawn(["--channel-fd=3"], stderr: 2, inheriting: [(theirs.descriptor, 3)])
            return (CaptureProcessHandle(child, timers: timers), ours)
        } catch {
            ours.close()
            throw error
        }
    }
}

extension CaptureChannel {
    /// Reads a capture process's reports as they come, every waiting one at each wake-up,
    /// until the channel ends or `heard` returns false (its session is gone). `heard` owns the
    /// descriptors that came with a report, also when it returns false. `ended` runs once
    /// the watch has let go of the channel: only then may the channel be closed, never under
    /// the watch.
    func watchReports(label: String, heard: @escaping @Sendable (CaptureReport, [Int32]) -> Bool,
                      ended: @escaping @Sendable () -> Void) {
        _ = ReadableWatch(descriptor: descriptor, label: label, whenCancelled: ended) { watch in
            repeat {
                guard let (report, descriptors) = receive(CaptureReport.self) else { return watch.cancel() }
                guard heard(report, descriptors) else { return watch.cancel() }
            } while hasPending
        }
    }
}

/// One running capture process as its session holds it: the process, replayd's end of its
/// channel, and the protected windows it is kept told of. Its end is reported once, after both
/// every report has been read (the channel closed) and the process has been reaped: the session
/// then knows everything the process said and how it ended.
final class CaptureProcessLink: Sendable {
    let process: CaptureProcessHandle
    private let channel: CaptureChannel
    private let protectedWindows: ProtectedWindows
    private let timers: any Timers
    private let state = Mutex<(end: CaptureProcessEnd, observer: Int?)>((CaptureProcessEnd(), nil))

    /// Starts a process for `id`; it is told nothing and heard from only once `start` runs,
    /// so its session can keep this link first (and tell the process things as it hears it).
    init(launcher: any CaptureProcessLauncher, id: String, protectedWindows: ProtectedWindows) throws {
        (process, channel) = try launcher.launch(id: id)
        self.protectedWindows = protectedWindows
        timers = launcher.timers
    }

    /// Sends the process `start`, made with the protected windows of now (each later change
    /// follows at once), and hears it from then on. `heard` gets every report and owns its
    /// descriptors if it returns true (false: its session is gone, and they are closed here);
    /// `ended` gets the exit status, once, at the end.
    func start(label: String, _ start: ([UInt32]) -> CaptureCommand, heard: @escaping @Sendable (CaptureReport, [Int32]) -> Bool,
               ended: @escaping @Sendable (Int32) -> Void) {
        // The channel is closed only once the watch has let go of it, never under the watch.
        channel.watchReports(label: label, heard: { report, descriptors in
            if !heard(report, descriptors) { descriptors.forEach { Glibc.close($0) } }
            return true
        }, ended: { [self] in over(channelClosed: true, ended: ended) })
        process.onExit { [self] status in over(exitStatus: status, ended: ended) }
        // `start` goes first (the process reads nothing else first); a change of the protected
        // windows made meanwhile follows it at once, as every later one does.
        let generation = protectedWindows.generation
        do {
            try channel.send(start(Array(protectedWindows.windows)))
        } catch {
            process.kill()
        }
        let observer = protectedWindows.observe { [weak self] windows in self?.tell(.protectedWindows(Array(windows))) }
        let alreadyOver = state.withLock { state in
            if !state.end.isOver { state.observer = observer }
            return state.end.isOver
        }
        if alreadyOver { protectedWindows.stopObserving(observer) }
        if protectedWindows.generation != generation { tell(.protectedWindows(Array(protectedWindows.windows))) }
    }

    /// Sends a command; a process that is gone is noticed by its exit, not here. Sent under
    /// the lock that closes the channel, so never to a descriptor closed meanwhile.
    func tell(_ command: CaptureCommand) {
        state.withLock { state in
            if !state.end.isOver { try? channel.send(command) }
        }
    }

    /// Ends a process that broke the channel's rules, and reads nothing more it sent.
    func breakOff() {
        process.kill()
        state.withLock { state in
            if !state.end.isOver { shutdown(channel.descriptor, Int32(SHUT_RDWR)) }
        }
    }

    private func over(channelClosed: Bool = false, exitStatus: Int32? = nil, ended: @Sendable (Int32) -> Void) {
        let end = state.withLock { state -> (status: Int32, observer: Int?)? in
            guard let status = state.end.note(channelClosed: channelClosed, exitStatus: exitStatus) else { return nil }
            channel.close()
            defer { state.observer = nil }
            return (status, state.observer)
        }
        // A process whose channel broke (a packet replayd could not read) can be told nothing
        // more, not even to stop: it is ended if it has not exited a moment later. (One that
        // closed it by exiting, the usual case, is reaped meanwhile and keeps its own status.)
        if channelClosed && end == nil {
            timers.after(2) { [self] in
                if state.withLock({ $0.end.exitStatus == nil }) { process.kill() }
            }
        }
        guard let end else { return }
        if let observer = end.observer { protectedWindows.stopObserving(observer) }
        ended(end.status)
    }
}
