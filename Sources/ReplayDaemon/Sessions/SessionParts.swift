public import ReplayCapture
public import ReplayCodec
public import ReplayMedia
import ReplaySystem

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
}

/// The clock samples are stamped with; sessions read "now" from it for starts, pauses and stops.
public protocol SessionClock: Sendable {
    func now() -> MediaTime
}

public struct MonotonicSessionClock: SessionClock {
    public init() {}
    public func now() -> MediaTime { MediaTime(nanoseconds: MonotonicClock.nanoseconds()) }
}
