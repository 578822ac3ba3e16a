import Foundation
import Logging
import NIOCore
import NIOPosix
@testable import ReplayDaemon
import ReplayIPC
import ReplaySystem
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The listener accepts from a `ReadableWatch`, with no thread of its own waiting: it hands
/// every waiting client to `admit`, says once that it stopped, and leaves a handed-over
/// socket as the service manager gave it.
@Suite struct ClientListenerTests {
    /// A listening socket in a folder of its own, and what a listener on it admitted.
    final class Rig: Sendable {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("listener-\(UUID().uuidString)")
        let path: String
        let socket: Int32
        let admitted = Mutex(0)
        let stops = Mutex(0)
        private let stopped = DispatchSemaphore(value: 0)

        init() throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent("s.sock").path
            socket = try UnixSocket.listen(path: path)
        }

        func listener(inherited: Bool) -> ClientListener {
            ClientListener(listener: socket, inherited: inherited, timers: DispatchTimers(), logger: Logger(label: "test"))
        }

        func serve(_ listener: ClientListener) {
            listener.serve(admit: { [self] fd in
                close(fd)
                admitted.withLock { $0 += 1 }
                return nil
            }, accepted: { _ in }, stopped: { [self] in
                stops.withLock { $0 += 1 }
                stopped.signal()
            })
        }

        func waitUntilStopped() -> Bool { stopped.wait(timeout: .now() + 5) == .success }

        func admittedCount(reaching count: Int) -> Int {
            let deadline = Date().addingTimeInterval(5)
            while admitted.withLock({ $0 }) < count && Date() < deadline { usleep(10_000) }
            return admitted.withLock { $0 }
        }

        deinit {
            close(socket)
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func everyWaitingClientIsAdmittedAndStoppingSaysSoOnce() throws {
        let rig = try Rig()
        let listener = rig.listener(inherited: false)
        // Three clients already wait in the backlog when serving starts: one wake accepts them all.
        let clients = try (0..<3).map { _ in try UnixSocket.connect(path: rig.path) }
        defer { clients.forEach { close($0) } }
        rig.serve(listener)
        #expect(rig.admittedCount(reaching: 3) == 3)
        let late = try UnixSocket.connect(path: rig.path)
        defer { close(late) }
        #expect(rig.admittedCount(reaching: 4) == 4)

        listener.stop()
        listener.stop()
        #expect(rig.waitUntilStopped())
        #expect(rig.stops.withLock { $0 } == 1)
    }

    @Test func aHandedOverSocketKeepsTheClientsThatCameAfterTheStopForTheNextDaemon() throws {
        let rig = try Rig()
        let first = rig.listener(inherited: true)
        rig.serve(first)
        first.stop()
        #expect(rig.waitUntilStopped())

        // The service manager's socket still listens: this client waits for the next replayd.
        let client = try UnixSocket.connect(path: rig.path)
        defer { close(client) }
        usleep(100_000)
        #expect(rig.admitted.withLock { $0 } == 0)
        let next = rig.listener(inherited: true)
        rig.serve(next)
        #expect(rig.admittedCount(reaching: 1) == 1)
        next.stop()
        #expect(rig.waitUntilStopped())
    }

    @Test func aListenerStoppedBeforeItServedOrNeverServedEndsCleanly() throws {
        let rig = try Rig()
        let stoppedFirst = rig.listener(inherited: false)
        stoppedFirst.stop()
        rig.serve(stoppedFirst)
        #expect(rig.waitUntilStopped())
        // Released without ever serving: nothing was watched, nothing is said.
        _ = rig.listener(inherited: true)
        #expect(rig.stops.withLock { $0 } == 1)
    }
}
