#if canImport(Glibc)
public import Glibc
#endif
public import FoundationEssentials

/// The daemon's own user in system mode (`replayd`): it alone owns the store, so no app,
/// whatever user it runs as, can open a recording's file.
public struct ServiceUser: Sendable {
    public let name: String
    public let uid: uid_t
    public let gid: gid_t

    /// Looks the user up; nil when it does not exist (the setup script creates it).
    public init?(named name: String) {
        guard let entry = getpwnam(name) else { return nil }
        self.name = name
        uid = entry.pointee.pw_uid
        gid = entry.pointee.pw_gid
    }

    /// Creates `directory` (and parents) and gives it to this user with `mode`.
    public func makeDirectory(_ directory: URL, mode: mode_t) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try syscall("chown(\(directory.path))") { chown(directory.path, uid, gid) }
        try syscall("chmod(\(directory.path))") { chmod(directory.path, mode) }
    }

    /// Gives up root for good: no supplementary groups, then the group, then the user.
    public func become() throws(SystemError) {
        try syscall("setgroups") { setgroups(0, nil) }
        // As root, setgid and setuid set the real, effective and saved ids alike.
        try syscall("setgid") { setgid(gid) }
        try syscall("setuid") { setuid(uid) }
        guard setuid(0) != 0 else { throw SystemError(call: "dropping root (setuid(0) still works)", errno: EPERM) }
    }
}
