#if canImport(Glibc)
import Glibc
#endif
import ReplaySystem

/// The file an exported clip is written into before it takes its name, through a descriptor
/// of its own (Foundation's FileHandle would load Foundation and ICU into the app).
final class PartialFile {
    private var descriptor: FileDescriptor?
    let path: String

    init(path: String) throws(RecordingError) {
        self.path = path
        do {
            descriptor = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        } catch {
            throw RecordingError(.failedToSaveClip, "cannot write \(path): \(error)")
        }
    }

    func write(_ bytes: [UInt8]) throws(RecordingError) {
        do {
            try bytes.withUnsafeBytes { (buffer) throws(SystemError) in try descriptor?.writeAll(buffer) }
        } catch {
            throw RecordingError(.failedToSaveClip, "cannot write \(path): \(error)")
        }
    }

    func close() {
        descriptor.take()?.close()
    }
}
