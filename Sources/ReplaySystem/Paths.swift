#if canImport(Glibc)
import Glibc
#endif
public import Foundation

/// Where the daemon's socket and store live by default.
public enum ReplayPaths {
    /// `$XDG_RUNTIME_DIR/openreplaykit`, or `/tmp/openreplaykit-UID` where that is unset.
    public static func runtimeDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let dir = environment["XDG_RUNTIME_DIR"], !dir.isEmpty {
            return URL(fileURLWithPath: dir).appendingPathComponent("openreplaykit")
        }
        return URL(fileURLWithPath: "/tmp/openreplaykit-\(getuid())")
    }

    /// The daemon's socket for the display named in `DISPLAY`: one daemon per display session.
    public static func defaultSocket(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let display = (environment["DISPLAY"] ?? "").filter { $0.isLetter || $0.isNumber }
        return runtimeDirectory(environment: environment)
            .appendingPathComponent(display.isEmpty ? "replayd.sock" : "replayd-\(display).sock")
    }

    /// `$XDG_DATA_HOME/openreplaykit/recordings`, by default under `~/.local/share`.
    public static func defaultStore(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let base: URL
        if let dir = environment["XDG_DATA_HOME"], !dir.isEmpty {
            base = URL(fileURLWithPath: dir)
        } else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            base = URL(fileURLWithPath: home).appendingPathComponent(".local/share")
        }
        return base.appendingPathComponent("openreplaykit/recordings")
    }

    /// `$XDG_STATE_HOME/openreplaykit`, by default under `~/.local/state`: the daemon's private
    /// state (the portal's restore token), which is neither a recording nor a setting.
    public static func defaultState(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let dir = environment["XDG_STATE_HOME"], !dir.isEmpty {
            return URL(fileURLWithPath: dir).appendingPathComponent("openreplaykit")
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".local/state/openreplaykit")
    }

    /// An executable installed beside the running one (all products build into one folder);
    /// from a test bundle, which lives in a subfolder of the build folder, the nearest folder
    /// above that holds it.
    public static func siblingExecutable(_ name: String) -> URL {
        var directory = runningExecutable().deletingLastPathComponent()
        while directory.path != "/" && !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent(name).path) {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent(name)
    }

    /// The running executable, symbolic links resolved.
    public static func runningExecutable() -> URL {
        URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0])
    }

    /// Set by `replay-demo-scene --desktop` for the command it runs in a virtual desktop: that
    /// desktop's private directory. The daemon on `$OPENREPLAYKIT_SOCKET` then serves that
    /// desktop alone, and whoever starts it there stops it when done.
    public static let virtualDesktopVariable = "OPENREPLAYKIT_VIRTUAL_DESKTOP"

    /// The daemon socket a client should use (set for apps in a virtual desktop; the SDK reads it).
    public static let socketVariable = "OPENREPLAYKIT_SOCKET"

    /// Creates `url` (and its parents) as a folder only this user can enter, or checks that
    /// it already is one: a real folder, not a symbolic link, owned by this user, and then
    /// made mode 0700. Another user who made it first (to receive what clients send there,
    /// or to keep the daemon out) gets it refused, never used; so does a folder every user
    /// shares (sticky, as /tmp), which is never made private under the others' feet: a socket
    /// or a token file named straight in /tmp must go in a folder of its own.
    public static func makePrivateDirectory(_ url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        if mkdir(url.path, 0o700) != 0 && errno != EEXIST { throw SystemError(call: "mkdir(\(url.path))", errno: errno) }
        var info = stat()
        guard lstat(url.path, &info) == 0 else { throw SystemError(call: "lstat(\(url.path))", errno: errno) }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw SystemError(call: "\(url.path) is not a folder (a link or a file is there); remove it", errno: ENOTDIR)
        }
        guard info.st_uid == geteuid() else {
            throw SystemError(call: "\(url.path) belongs to uid \(info.st_uid), not to you (uid \(geteuid())); it is not used, remove it",
                              errno: EACCES)
        }
        guard info.st_mode & S_ISVTX == 0 else {
            throw SystemError(call: "\(url.path) is a folder every user shares; give a folder of its own inside it", errno: EPERM)
        }
        guard chmod(url.path, 0o700) == 0 else {
            throw SystemError(call: "chmod(\(url.path))", errno: errno)
        }
    }
}
