public import FoundationEssentials
public import ReplayCaptureModel
public import ReplayIPC
import ReplayMedia
import ReplaySystem
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's private store: a directory of mode 0700 holding `ID.mp4` and its `ID.json`.
/// Clients only ever see ids; paths never leave the daemon.
public final class RecordingStore: RecordingShelf {
    public let directory: URL

    /// Opens (creating if needed) the store. Entries left "recording" by a daemon that died
    /// are marked interrupted: their movie is playable up to its last fragment.
    public init(directory: URL) throws {
        self.directory = directory
        try ReplayPaths.makePrivateDirectory(directory)
        for info in list() where info.state == .recording {
            keepInterrupted(id: info.id, why: "replayd stopped during the recording")
        }
    }

    /// Marks recording `id` interrupted, with the figures of its movie's whole fragments;
    /// one with no picture is deleted (nil). For a recording whose writer died mid-way.
    @discardableResult
    func keepInterrupted(id: String, why: String) -> RecordingInfo? {
        guard var info = info(id: id) else {
            delete(id: id)
            return nil
        }
        info.state = .interrupted
        info.error = info.error ?? why
        info.bytes = fileSize(id: info.id)
        // The figures saved a second before the stop can be ahead of the file's last whole fragment.
        if let path = moviePath(id: info.id), let facts = FragmentedMovieFacts(contentsOf: path) {
            info.frames = facts.videoFrames
            info.duration = facts.videoDuration
            info.codec = info.codec ?? facts.videoCodec.flatMap(VideoCodec.init(rawValue:))
        } else if info.bytes == 0 {
            // Not a byte was written: whatever the last saved figures said, nothing was kept.
            info.frames = 0
        }
        // Killed before its first fragment: there is nothing to keep.
        if info.frames == 0 {
            delete(id: info.id)
            return nil
        }
        save(info)
        return info
    }

    /// A fresh id, such as `rec-20261121-134501-3fa2`: sortable by time, unguessable enough
    /// that ids of other recordings are not trivially enumerable.
    ///
    /// The date is UTC, from the C library: a `DateFormatter` would load ICU's calendar and
    /// locale data, megabytes that an idle daemon then keeps mapped.
    public func newID(now: Date = Date()) -> String {
        var seconds = time_t(now.timeIntervalSince1970.rounded(.down))
        var utc = tm()
        gmtime_r(&seconds, &utc)
        func digits(_ value: Int32, _ count: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, count - text.count)) + text
        }
        let date = digits(utc.tm_year + 1900, 4) + digits(utc.tm_mon + 1, 2) + digits(utc.tm_mday, 2)
        let time = digits(utc.tm_hour, 2) + digits(utc.tm_min, 2) + digits(utc.tm_sec, 2)
        let suffix = String(UInt32.random(in: 0...0xffff_ffff), radix: 16)
        return "rec-\(date)-\(time)-\(suffix)"
    }

    /// Ids come from clients: accept only the shape we hand out, so no id can name a path.
    public static func isValidID(_ id: String) -> Bool {
        id.hasPrefix("rec-") && id.count <= 64 && id.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
    }

    public func moviePath(id: String) -> URL? {
        guard Self.isValidID(id) else { return nil }
        return directory.appendingPathComponent("\(id).mp4")
    }

    public func info(id: String) -> RecordingInfo? {
        guard Self.isValidID(id),
              let data = try? Data(contentsOf: directory.appendingPathComponent("\(id).json")) else { return nil }
        return try? JSONDecoder().decode(RecordingInfo.self, from: data)
    }

    /// Writes the metadata atomically; a full disk leaves the previous version in place.
    @discardableResult
    public func save(_ info: RecordingInfo) -> Bool {
        guard Self.isValidID(info.id), let data = try? JSONEncoder().encode(info) else { return false }
        do {
            try data.write(to: directory.appendingPathComponent("\(info.id).json"), options: .atomic)
            return true
        } catch {
            return false
        }
    }

    /// Every recording, oldest first.
    public func list() -> [RecordingInfo] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }
            .compactMap { info(id: String($0.dropLast(5))) }
            .sorted { $0.created < $1.created }
    }

    /// Removes a recording and its metadata; false when there is no such recording.
    @discardableResult
    public func delete(id: String) -> Bool {
        guard let movie = moviePath(id: id), info(id: id) != nil || FileManager.default.fileExists(atPath: movie.path) else { return false }
        try? FileManager.default.removeItem(at: movie)
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("\(id).json"))
        return true
    }

    /// Bytes free for us on the store's file system; nil when the system cannot say.
    public func freeBytes() -> Int64? { diskSpace()?.free }

    /// The store's file system: what is free for this user, and its size.
    public func diskSpace() -> (free: Int64, size: Int64)? {
        var disk = statvfs()
        guard statvfs(directory.path, &disk) == 0 else { return nil }
        return (Int64(disk.f_bavail) * Int64(disk.f_frsize), Int64(disk.f_blocks) * Int64(disk.f_frsize))
    }

    /// What apps' recordings leave free on the store's disk for the rest of the system: a
    /// twentieth of it, at most 2 GiB. An app that records on and on is stopped there; the
    /// person's own recordings may use the disk to its end.
    public static func appReserve(diskSize: Int64) -> Int64 { min(diskSize / 20, 2 << 30) }

    public func fileSize(id: String) -> Int64 {
        guard let path = moviePath(id: id) else { return 0 }
        return FileFacts.size(atPath: path.path) ?? 0
    }
}
