#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import ReplaySystem
import ReplayTestEvents
import Synchronization
import Testing

/// `Pipe.readLine(_:within:on:then:)`, which starting a sandbox follows bwrap and pasta with.
@Suite struct PipeTests {
    /// Reads the first line of `fd` through the watch, and awaits the answer (`.none` if none came).
    private static func line(of fd: Int32, within seconds: Int64, on timers: any Timers = DispatchTimers(),
                             writing: (Int32) -> Void = { _ in }) async -> String?? {
        let answers = Events<String?>()
        Pipe.readLine(fd, within: seconds, on: timers) { line in answers.record(line) }
        writing(fd)
        guard let answer = await answers.next(within: 20) else { return .none }
        // Answered once: a second answer would come right after the first.
        if await answers.next(within: 0.2) != nil { return "answered more than once" }
        return answer
    }

    private static func write(_ text: String, to fd: Int32) {
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(fd, $0.baseAddress, $0.count - 1) }
    }

    @Test func aLineWrittenInPiecesArrivesWholeWithoutItsNewline() async throws {
        let pipe = try Pipe.make()
        defer { close(pipe.read); close(pipe.write) }
        let line = await Self.line(of: pipe.read, within: 10) { _ in
            Self.write("{ \"child-", to: pipe.write)
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { Self.write("pid\": 42 }\n", to: pipe.write) }
        }
        #expect(line == .some("{ \"child-pid\": 42 }"))
    }

    @Test func aWriterThatClosesWithoutANewlineGivesNil() async throws {
        let pipe = try Pipe.make()
        defer { close(pipe.read) }
        let line = await Self.line(of: pipe.read, within: 10) { _ in
            Self.write("half a line", to: pipe.write)
            close(pipe.write)
        }
        #expect(line == .some(nil))
    }

    @Test func aWriterThatSaysNothingGivesNilOnceTheTimeIsUp() async throws {
        let pipe = try Pipe.make()
        defer { close(pipe.read); close(pipe.write) }
        #expect(await Self.line(of: pipe.read, within: 1) == .some(nil))
        // The descriptor is still the caller's, open: what comes later is there to read.
        Self.write("later\n", to: pipe.write)
        var byte: UInt8 = 0
        #expect(read(pipe.read, &byte, 1) == 1 && byte == UInt8(ascii: "l"))
    }

    /// A line that comes first ends the time limit too: its timer is cancelled, not left to
    /// run out its seconds holding the finished watch.
    @Test func aLineThatComesFirstCancelsTheTimeLimit() async throws {
        let pipe = try Pipe.make()
        defer { close(pipe.read); close(pipe.write) }
        let timers = WatchedTimers()
        let line = await Self.line(of: pipe.read, within: 600, on: timers) { _ in Self.write("ready\n", to: pipe.write) }
        #expect(line == .some("ready"))
        #expect(timers.limits.withLock { $0.count } == 1)
        #expect(timers.limits.withLock { $0.allSatisfy(\.cancelled) })
    }
}

/// Dispatch's timers, keeping each one-shot timer handed out to see whether it was cancelled.
private final class WatchedTimers: Timers {
    final class Limit: TimerControl {
        let inner: any TimerControl
        private let ended = Mutex(false)
        var cancelled: Bool { ended.withLock { $0 } }
        init(_ inner: any TimerControl) { self.inner = inner }
        func cancel() {
            ended.withLock { $0 = true }
            inner.cancel()
        }
    }

    private let dispatch = DispatchTimers()
    let limits = Mutex<[Limit]>([])

    func now() -> Int64 { dispatch.now() }

    func after(_ seconds: Double, on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> any TimerControl {
        let limit = Limit(dispatch.after(seconds, on: queue, action))
        limits.withLock { $0.append(limit) }
        return limit
    }

    func repeating(every interval: Double, on queue: DispatchQueue, paused: Bool,
                   _ action: @escaping @Sendable () -> Void) -> any RepeatingTimerControl {
        dispatch.repeating(every: interval, on: queue, paused: paused, action)
    }

    func deadline(on queue: DispatchQueue, _ action: @escaping @Sendable () -> Void) -> any DeadlineTimerControl {
        dispatch.deadline(on: queue, action)
    }
}
