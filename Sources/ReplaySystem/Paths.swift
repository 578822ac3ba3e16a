#if canImport(Glibc)
public import Glibc
#endif
public import FoundationEssentials

/// Where the daemon's socket and store live by default.
public enum ReplayPaths {
    /// The folder of the user-mode socket, the redirect pages and replayd.log: the preferred one
    /// (below), unless somebody else holds that name; then one only this user can make.
    /// Another user who makes the preferred folder first (any user can, in /tmp) must not keep
    /// the person from replayd once their own daemon is gone: the name stays refused, and the
    /// person, who cannot remove it, is served from the fallback.
    public static func runtimeDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let preferred = preferredRuntimeDirectory(environment: environment)
        return squat(of: preferred) == nil ? preferred : fallbackRuntimeDirectory(environment: environment)
    }

    /// `$XDG_RUNTIME_DIR/openreplaykit`, or `/tmp/openreplaykit-UID` where that is unset.
    public static func preferredRuntimeDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let dir = environment["XDG_RUNTIME_DIR"], !dir.isEmpty {
            return URL(fileURLWithPath: dir).appendingPathComponent("openreplaykit")
        }
        return URL(fileURLWithPath: "/tmp/openreplaykit-\(getuid())")
    }

    /// Where a squatted preferred folder is passed for: in the user's runtime folder
    /// (`$XDG_RUNTIME_DIR`, else `/run/user/UID`) when nobody else can make anything there, as
    /// systemd-logind makes it (0700), under a second name when the preferred one is already in
    /// it; otherwise in the user's state folder, in their home.
    static func fallbackRuntimeDirectory(environment: [String: String]) -> URL {
        let preferred = preferredRuntimeDirectory(environment: environment)
        let runtime = URL(fileURLWithPath: environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/run/user/\(geteuid())")
        if onlyThisUserWrites(runtime) {
            let inRuntime = preferred.deletingLastPathComponent().standardizedFileURL.path == runtime.standardizedFileURL.path
            let candidate = runtime.appendingPathComponent(inRuntime ? "openreplaykit-\(geteuid())" : "openreplaykit")
            if squat(of: candidate) == nil { return candidate }
        }
        return defaultState(environment: environment).appendingPathComponent("runtime")
    }

    /// A real folder of this user's that nobody else may make names in.
    private static func onlyThisUserWrites(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && info.st_uid == geteuid() && info.st_mode & 0o022 == 0
    }

    /// Something at a path this user wants for a folder of their own that is not one: another
    /// user's, or not a folder. Says how to clean up.
    public struct Squat: Error, CustomStringConvertible, Sendable {
        public let path: String
        /// Its owner's uid, when it is not this user.
        public let owner: uid_t?

        public var description: String {
            let quoted = "'" + path.replacing( "'", with: "'\\''") + "'"
            guard let owner else { return "\(path) is not a folder (a link or a file is there; remove it: rm \(quoted))" }
            let name = getpwuid(owner).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
            return "\(path) belongs to uid \(owner)\(name.map { " (\($0))" } ?? ""), not to you (uid \(geteuid())), and is not used "
                + "(only that user or root can remove it: sudo -u \(name ?? "'#\(owner)'") rm -r \(quoted))"
        }
    }

    /// What holds `url` instead of a folder of this user's; nil when it is free or is one.
    public static func squat(of url: URL) -> Squat? {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { return nil }
        if info.st_uid != geteuid() { return Squat(path: url.path, owner: info.st_uid) }
        return info.st_mode & S_IFMT == S_IFDIR ? nil : Squat(path: url.path, owner: nil)
    }

    /// The daemon's socket for the display named in `DISPLAY`: one daemon per display session.
    public static func defaultSocket(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let display = (environment["DISPLAY"] ?? "").filter { $0.isLetter || $0.isNumber }
        return display.isEmpty ? sessionSocket(environment: environment)
            : runtimeDirectory(environment: environment).appendingPathComponent("replayd-\(display).sock")
    }

    /// The session's daemon, whatever the display: where systemd's replayd.socket listens.
    public static func sessionSocket(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        runtimeDirectory(environment: environment).appendingPathComponent("replayd.sock")
    }

    /// `$XDG_DATA_HOME/openreplaykit/recordings`, by default under `~/.local/share`.
    public static func defaultStore(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let base: URL
        if let dir = environment["XDG_DATA_HOME"], !dir.isEmpty {
            base = URL(fileURLWithPath: dir)
        } else {
            let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
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
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
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
        if let squat = squat(of: url) { throw SystemError(call: squat.description, errno: squat.owner == nil ? ENOTDIR : EACCES) }
        guard info.st_mode & S_ISVTX == 0 else {
            throw SystemError(call: "\(url.path) is a folder every user shares; give a folder of its own inside it", errno: EPERM)
        }
        guard chmod(url.path, 0o700) == 0 else {
            throw SystemError(call: "chmod(\(url.path))", errno: errno)
        }
    }
}
