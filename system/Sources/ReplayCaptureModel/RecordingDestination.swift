package import ReplayMedia

/// Where a recording's movie goes.
package enum RecordingDestination: Sendable, Equatable, Codable {
    /// A movie file in the store, listed as a recording from its start.
    case store
    /// A clip buffer: up to `length` and `byteBudget` bytes kept in memory, or where it
    /// `spills`, in a file replayd hands over with the start (unlinked, in the store); nothing
    /// is in the store until `saveClip`.
    case clipBuffer(length: MediaTime, byteBudget: Int, spills: Bool = false)
}
