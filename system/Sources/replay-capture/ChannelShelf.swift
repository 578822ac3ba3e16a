import FoundationEssentials
import ReplayCaptureModel
import ReplayIPC
import ReplaySession
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The store as a capture process sees it: the movie files replayd handed it (by descriptor,
/// reopened through /proc/self/fd), and the channel for every entry it would list or forget.
final class ChannelShelf: RecordingShelf {
    private let channel: CaptureChannel
    private let files = Mutex<[String: Int32]>([:])

    init(channel: CaptureChannel) { self.channel = channel }

    /// `descriptor` is the movie file of recording `id` from now on.
    func hand(_ descriptor: Int32, for id: String) {
        files.withLock { $0[id] = descriptor }
    }

    /// Closes the file of `id` (a clip once saved).
    func release(_ id: String) {
        if let descriptor = files.withLock({ $0.removeValue(forKey: id) }) { close(descriptor) }
    }

    func moviePath(id: String) -> URL? {
        files.withLock { $0[id] }.map { URL(fileURLWithPath: "/proc/self/fd/\($0)") }
    }

    func save(_ info: RecordingInfo) -> Bool {
        (try? channel.send(CaptureReport.entry(info))) != nil
    }

    func fileSize(id: String) -> Int64 {
        guard let descriptor = files.withLock({ $0[id] }) else { return 0 }
        var facts = stat()
        return fstat(descriptor, &facts) == 0 ? Int64(facts.st_size) : 0
    }

    func delete(id: String) -> Bool {
        (try? channel.send(CaptureReport.discard(id: id))) != nil
    }
}
