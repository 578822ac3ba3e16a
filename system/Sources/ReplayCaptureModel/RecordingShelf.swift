package import FoundationEssentials
package import ReplayIPC

/// Where a recording's movie is written and its entry kept: the capture process's channel to
/// replayd (the capture process cannot reach the store: it writes the one movie file it was
/// handed), or replayd's store itself when a unit test runs a session in its own process.
package protocol RecordingShelf: Sendable {
    /// The file the movie of `id` is written to.
    func moviePath(id: String) -> URL?
    /// Lists or updates the entry of a recording.
    @discardableResult func save(_ info: RecordingInfo) -> Bool
    /// The movie's size on disk.
    func fileSize(id: String) -> Int64
    /// Forgets a recording and its movie (one with no picture is never kept).
    @discardableResult func delete(id: String) -> Bool
}
