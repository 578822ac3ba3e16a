import Dispatch
import FoundationEssentials
import Logging
import ReplayCaptureModel
import ReplaySystem
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An extension's standard error: a pipe replayd reads into its own log, line by line, at
/// most `linesPerSecond` lines a second (then one line saying how many were dropped). The
/// extension never holds the daemon's log itself, so it can neither rewrite its history nor
/// fill the disk with it. Each line passes through the broadcast's `SecretRedaction` first:
/// the extension's libraries print what they were given (FFmpeg, a URL with its passphrase).
/// (replayd's log handler, `VisibleTextLog`, then shows its control characters, not obeys them.)
final class ExtensionOutput: Sendable {
    static let linesPerSecond = 20
    static let maxLine = 500

    private let watch = Mutex<ReadableWatch?>(nil)
    private let state = Mutex((pending: [UInt8](), windowStart: Int64(0), linesInWindow: 0, dropped: 0))
    private let logger: Logger
    private let timers: any Timers
    private let extensionID: String
    private let redaction: SecretRedaction
    /// Everything the pipe held is logged, and the drops said.
    private let ended = Completion<Void>()

    /// Starts reading `fd` (the pipe's read end, which it then owns).
    init(fd: Int32, extensionID: String, redaction: SecretRedaction, timers: any Timers, logger: Logger) {
        self.redaction = redaction
        self.logger = logger
        self.timers = timers
        self.extensionID = extensionID
        let watch = ReadableWatch(descriptor: fd, label: "extension-stderr", whenCancelled: { [self] in
            // Closed at the end of the pipe, or by `close` (the extension is gone, and its last
            // words may still wait in the pipe): they are read, then the drops are said, once.
            while FileDescriptor.isReadable(fd), readChunk(fd) {}
            flush(final: true)
            Glibc.close(fd)
            ended.complete(())
        }) { [self] watch in
            if !readChunk(fd) { watch.cancel() }
        }
        self.watch.withLock { $0 = watch }
    }

    func close() { watch.withLock { $0 }?.cancel() }

    /// Runs `handler` once the pipe has ended (every process that could write to it gone) and
    /// what it held is logged, or after `seconds`, whichever comes first.
    func whenEnded(within seconds: Double, _ handler: @escaping @Sendable () -> Void) {
        ended.onComplete(within: seconds, on: timers) { _ in handler() }
    }

    /// Reads what the pipe has and logs its whole lines; false at its end (or an error).
    private func readChunk(_ fd: Int32) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        state.withLock { $0.pending += chunk[..<count] }
        flush(final: false)
        return true
    }

    private func flush(final: Bool) {
        let (lines, dropped) = state.withLock { state -> ([String], Int) in
            var lines: [String] = []
            while let newline = state.pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: state.pending[..<newline].prefix(Self.maxLine), as: UTF8.self))
                state.pending.removeSubrange(...newline)
            }
            // A line that never ends is cut, not kept growing.
            if final || state.pending.count > Self.maxLine {
                if !state.pending.isEmpty { lines.append(String(decoding: state.pending.prefix(Self.maxLine), as: UTF8.self)) }
                state.pending = []
            }
            let now = timers.now()
            var reportDropped = 0
            if now - state.windowStart >= 1_000_000_000 {
                reportDropped = state.dropped
                state.dropped = 0
                state.windowStart = now
                state.linesInWindow = 0
            }
            let room = max(0, Self.linesPerSecond - state.linesInWindow)
            state.dropped += max(0, lines.count - room)
            state.linesInWindow += min(room, lines.count)
            if final { reportDropped += state.dropped }
            return (Array(lines.prefix(room)), reportDropped)
        }
        for line in lines { logger.info("\(redaction.redact(line))", metadata: ["extension": "\(extensionID)"]) }
        if dropped > 0 { logger.warning("the extension wrote too much: \(dropped) lines of its output were not logged", metadata: ["extension": "\(extensionID)"]) }
    }
}
