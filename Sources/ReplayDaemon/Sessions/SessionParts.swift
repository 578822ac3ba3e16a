public import ReplayCapture
public import ReplayCodec
public import ReplayMedia
import ReplaySystem
public import ReplaySession

/// What sessions are built from, chosen once when the daemon starts: sessions are handed
/// these and never make their own capture, encoder, extension process or clock.
public struct SessionParts: Sendable {
    public var capture: any CaptureBackend
    public var movies: any MovieSinkFactory
    public var extensions: any ExtensionHost
    public var clock: any SessionClock

    public init(capture: any CaptureBackend, movies: any MovieSinkFactory = MovieFileFactory(),
                extensions: any ExtensionHost, clock: any SessionClock = MonotonicSessionClock()) {
        self.capture = capture
        self.movies = movies
        self.extensions = extensions
        self.clock = clock
    }

    /// What a recording is built from.
    package var recording: RecordingParts { RecordingParts(capture: capture, movies: movies, clock: clock) }
}
