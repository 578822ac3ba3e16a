import ArgumentParser
import FoundationEssentials
import ReplaySystem
import ReplayIPC
#if canImport(Glibc)
import Glibc
#endif

/// Where an exported movie goes: a file the person named, or standard output (`-`).
///
/// Everything that can be known about the place is checked before anything is recorded
/// (`check`), so a bad `--output` never costs a take. A file is written beside its target and
/// renamed into place when complete; the rename is what replaces an old file, so nothing is
/// removed before the new movie exists, and a folder (which rename(2) refuses) is never
/// replaced.
enum MovieDestination: Equatable {
    case file(String)
    case standardOutput

    init(_ argument: String) {
        self = argument == "-" ? .standardOutput : .file(argument)
    }

    /// The container written: `--container` when given, else what the file name says (MP4
    /// unless it ends in .mkv). A container that contradicts the file's extension is refused.
    func container(choice: ContainerChoice?, option: String) throws -> MovieContainer {
        guard case .file(let path) = self else { return choice?.container ?? .mp4 }
        let named = ContainerChoice(fileExtensionOf: path)
        if let choice, let named, choice != named {
            throw ValidationError("--container \(choice.rawValue) writes \(choice.container == .matroska ? "Matroska" : "MP4"), "
                + "but \(option) \(path) ends in .\(URL(fileURLWithPath: path).pathExtension): "
                + "name the file .\(choice.rawValue), or leave out --container")
        }
        return choice?.container ?? named?.container ?? .mp4
    }

    /// Refuses, before recording, a destination the movie could not be written to: an
    /// existing file without `force`, anything that is not a regular file, a folder that is
    /// missing, not a folder or not writable, a disk without room for `bytesNeeded`, or a
    /// terminal as standard output.
    func check(force: Bool, option: String, bytesNeeded: Int64) throws {
        let path: String
        switch self {
        case .standardOutput:
            if isatty(STDOUT_FILENO) == 1 {
                throw ValidationError("\(option) - writes the movie to standard output, which is a terminal here: "
                    + "pipe it (| ffplay -) or redirect it (> file.mp4)")
            }
            return
        case .file(let file):
            path = file
        }
        var status = stat()
        if lstat(path, &status) == 0 {
            let type = status.st_mode & S_IFMT
            if type == S_IFDIR {
                throw ValidationError("\(path) is a folder: \(option) names the movie file to write, such as \(path.hasSuffix("/") ? path : path + "/")recording.mp4")
            }
            if type != S_IFREG {
                throw ValidationError("\(path) exists and is not a regular file: \(option) writes a new movie file, and --force replaces only a regular file")
            }
            if !force { throw ValidationError("\(path) exists; pass --force to replace it") }
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var folderStatus = stat()
        guard stat(folder, &folderStatus) == 0 else {
            throw ValidationError("cannot write \(path): its folder \(folder) \(errno == ENOENT ? "does not exist" : "cannot be read: \(Self.reason(errno))")")
        }
        guard folderStatus.st_mode & S_IFMT == S_IFDIR else {
            throw ValidationError("cannot write \(path): \(folder) is not a folder")
        }
        // A real try, not access(2): root passes access on a folder it still cannot write (/proc, a read-only mount).
        let probe = Self.partialPath(for: path)
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 {
            let problem = errno
            if problem != EEXIST { throw ValidationError("cannot write in \(folder): \(Self.reason(problem))") }
        } else {
            close(fd)
            unlink(probe)
        }
        try checkRoom(bytesNeeded: bytesNeeded, forAMinute: true)
    }

    /// Refuses a file system without `bytesNeeded` free beside the target.
    func checkRoom(bytesNeeded: Int64, forAMinute: Bool = false) throws {
        guard case .file(let path) = self else { return }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var disk = statvfs()
        guard statvfs(folder, &disk) == 0 else { return }
        let free = Int64(disk.f_bavail) * Int64(disk.f_frsize)
        guard free < bytesNeeded else { return }
        let what = forAMinute ? "a minute of this recording needs about" : "the movie needs"
        throw ValidationError("only \(Self.megabytes(free)) free in \(folder); \(what) \(Self.megabytes(bytesNeeded)): "
            + "free some space or choose another place")
    }

    /// The file written while an export is under way, beside its target.
    static func partialPath(for path: String) -> String {
        let target = URL(fileURLWithPath: path)
        return target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).partial").path
    }

    static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }

    static func megabytes(_ bytes: Int64) -> String { String(printf: "%.0f MB", Double(bytes) / 1_000_000) }
}

extension ContainerChoice {
    /// What a file name's extension says, if it says anything: .mkv/.mka Matroska, .mp4/.m4v/.mov MP4.
    init?(fileExtensionOf path: String) {
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "mkv", "mka": self = .mkv
        case "mp4", "m4v", "mov": self = .mp4
        default: return nil
        }
    }
}
