import Dispatch
import OpenReplayKit
import Synchronization

/// A C pointer the app gave with a callback, handed back to it as it was.
struct UserData: @unchecked Sendable {
    // @unchecked: the library never reads or writes through it; it only passes it back.
    let pointer: UnsafeMutableRawPointer?
}

/// Runs an SDK call to its end on Swift's concurrency pool and blocks the calling thread (an
/// app's, or a client's callback thread, never one of the pool's) until it has.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws(RecordingError) -> T) throws(CFailure) -> T {
    let outcome = Outcome<T>()
    Task {
        do throws(RecordingError) {
            outcome.set(.success(try await body()))
        } catch {
            outcome.set(.failure(error))
        }
    }
    switch outcome.wait() {
    case .success(let value): return value
    case .failure(let error): throw CFailure(error)
    }
}

/// One result, waited for.
final class Outcome<T: Sendable>: Sendable {
    private let value = Mutex<Result<T, RecordingError>?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func set(_ result: Result<T, RecordingError>) {
        value.withLock { $0 = result }
        ready.signal()
    }

    func wait() -> Result<T, RecordingError> {
        ready.wait()
        return value.withLock { $0! }
    }
}

/// A C string argument that must be there.
func string(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(CFailure) -> String {
    guard let pointer else { throw CFailure(.invalidArgument, "\(name) is NULL") }
    let text = String(cString: pointer)
    guard !text.isEmpty else { throw CFailure(.invalidArgument, "\(name) is empty") }
    return text
}
