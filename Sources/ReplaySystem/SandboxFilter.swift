import CShims

/// The seccomp program for what runs inside an extension's sandbox (`CShims_sandbox_filter`):
/// no namespaces, mounts or memfds of its own, which no walk of /proc could count.
public enum SandboxFilter {
    /// A close-on-exec memfd holding the program, read from its start by bwrap's
    /// `--add-seccomp-fd`; the caller closes it once bwrap has started.
    public static func descriptor() throws(SystemError) -> Int32 {
        let fd = CShims_sandbox_filter()
        guard fd >= 0 else { throw SystemError(call: "sandbox seccomp program", errno: -fd) }
        return fd
    }
}
