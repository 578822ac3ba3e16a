import ReplaySystem
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The sd_listen_fds protocol's variables, read as a pure function of the environment and pid.
@Suite struct SocketActivationTests {
    typealias Failure = SocketActivation.Failure

    @Test func oneSocketForThisProcessIsDescriptorThree() throws {
        #expect(try SocketActivation.descriptor(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "1"], pid: 42) == 3)
        // LISTEN_FDNAMES is only a label; it changes nothing.
        #expect(try SocketActivation.descriptor(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "replayd.socket"],
                                                pid: 42) == 3)
    }

    @Test func noVariablesMeanAnOrdinaryStart() throws {
        #expect(try SocketActivation.descriptor(environment: [:], pid: 42) == nil)
        #expect(try SocketActivation.descriptor(environment: ["LISTEN_FDS": "1"], pid: 42) == nil)
        #expect(try SocketActivation.descriptor(environment: ["LISTEN_PID": "42"], pid: 42) == nil)
    }

    @Test func variablesMeantForAnotherProcessAreIgnored() throws {
        // A parent that was socket-activated and forgot to unset them: not our socket.
        #expect(try SocketActivation.descriptor(environment: ["LISTEN_PID": "41", "LISTEN_FDS": "1"], pid: 42) == nil)
    }

    @Test func aCountOfZeroIsNoSocket() throws {
        #expect(try SocketActivation.descriptor(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "0"], pid: 42) == nil)
    }

    @Test func moreThanOneSocketIsRefused() {
        #expect(throws: Failure.tooMany(2)) {
            try SocketActivation.descriptor(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "2"], pid: 42)
        }
        #expect(Failure.tooMany(2).description.contains("exactly one"))
    }

    @Test func nonNumericValuesAreRefused() {
        for bad in ["", "abc", "4x", " 42", "-1", "0x2a"] {
            #expect(throws: Failure.malformed(variable: "LISTEN_PID", value: bad)) {
                try SocketActivation.descriptor(environment: ["LISTEN_PID": bad, "LISTEN_FDS": "1"], pid: 42)
            }
        }
        for bad in ["", "one", "-1", "1 "] {
            #expect(throws: Failure.malformed(variable: "LISTEN_FDS", value: bad)) {
                try SocketActivation.descriptor(environment: ["LISTEN_PID": "42", "LISTEN_FDS": bad], pid: 42)
            }
        }
    }

    @Test func onlyAListeningUnixStreamSocketIsAccepted() throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        #expect(throws: Failure.notAListeningUnixSocket("not listening")) { try SocketActivation.checkListeningUnixStream(pair[0]) }

        let datagram = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(datagram) }
        #expect(throws: Failure.notAListeningUnixSocket("not SOCK_STREAM")) { try SocketActivation.checkListeningUnixStream(datagram) }

        let inet = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(inet) }
        #expect(throws: Failure.notAListeningUnixSocket("address family \(AF_INET), not AF_UNIX")) {
            try SocketActivation.checkListeningUnixStream(inet)
        }

        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { fds.forEach { close($0) } }
        #expect(throws: (any Error).self) { try SocketActivation.checkListeningUnixStream(fds[0]) }
    }
}
