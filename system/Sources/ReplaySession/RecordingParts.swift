package import ReplayCapture
package import ReplayCodec
import ReplayMedia
import ReplaySystem

/// What a recording is built from: its capture backend, its movie writer and its clock. In a
/// capture process the real ones; in unit tests fakes.
package struct RecordingParts: Sendable {
    package var capture: any CaptureBackend
    package var movies: any MovieSinkFactory
    package var clock: any SessionClock

    package init(capture: any CaptureBackend, movies: any MovieSinkFactory = MovieFileFactory(),
                 clock: any SessionClock = MonotonicSessionClock()) {
        self.capture = capture
        self.movies = movies
        self.clock = clock
    }
}
