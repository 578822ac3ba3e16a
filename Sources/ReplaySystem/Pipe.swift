import CShims
#if canImport(Glibc)
import Glibc
#endif

/// A pipe whose ends are close-on-exec from the start: only the child it is handed to gets one.
public enum Pipe {
    public static func make() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        _ = try syscall("pipe2") { CShims_pipe_cloexec(&fds) }
        return (fds[0], fds[1])
    }
}
