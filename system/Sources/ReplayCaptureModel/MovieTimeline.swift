package import ReplayMedia

/// Maps capture times to movie times for a recording that can be paused: what was captured
/// while paused is left out and what follows moves back by the time paused, so the movie has
/// neither a gap nor a frozen span where it was paused.
///
/// Decided by the samples' own times, not by when they arrive, so a picture in flight when
/// the person pressed pause is placed by when it was captured.
package struct MovieTimeline: Sendable {
    package let origin: MediaTime
    private var pauses: [(start: MediaTime, end: MediaTime?)] = []

    package init(origin: MediaTime) { self.origin = origin }

    package var isPaused: Bool { pauses.last.map { $0.end == nil } ?? false }

    /// The time left out so far.
    package var pausedTime: MediaTime {
        pauses.reduce(.zero) { total, pause in pause.end.map { total + ($0 - pause.start) } ?? total }
    }

    package mutating func pause(at time: MediaTime) {
        guard !isPaused else { return }
        let floor = pauses.last?.end ?? origin
        pauses.append((max(time, floor), nil))
    }

    package mutating func resume(at time: MediaTime) {
        guard isPaused else { return }
        pauses[pauses.count - 1].end = max(time, pauses[pauses.count - 1].start)
    }

    /// Where a sample captured at `time` goes in the movie; nil before the start or while paused.
    package func movieTime(of time: MediaTime) -> MediaTime? {
        guard time >= origin else { return nil }
        var removed = MediaTime.zero
        for pause in pauses {
            guard time >= pause.start else { break }
            guard let end = pause.end, time >= end else { return nil }
            removed = removed + (end - pause.start)
        }
        return time - origin - removed
    }

    /// The movie's length when stopped at `time`: a stop while paused ends where the pause began.
    package func duration(stoppedAt time: MediaTime) -> MediaTime {
        var removed = MediaTime.zero
        for pause in pauses {
            guard time >= pause.start else { break }
            guard let end = pause.end, time >= end else { return max(.zero, pause.start - origin - removed) }
            removed = removed + (end - pause.start)
        }
        return max(.zero, time - origin - removed)
    }
}
