package import ReplayMedia

/// What a broadcast's capture captures.
package struct BroadcastCaptureOptions: Codable, Sendable, Equatable {
    package var fps: Int
    package var showCursor: Bool
    /// Only this process's windows (an app's own broadcast); nil: the screen.
    package var onlyProcess: Int32?
    package var audio: [AudioSource]

    package init(fps: Int, showCursor: Bool, onlyProcess: Int32?, audio: [AudioSource]) {
        self.fps = fps
        self.showCursor = showCursor
        self.onlyProcess = onlyProcess
        self.audio = audio
    }
}

/// A broadcast capture's surfaces, for the extension: read-only descriptors (the caller
/// closes them), the video surfaces first and the audio ring last, each `surfaceSize` bytes.
package struct BroadcastCaptureOpened: Sendable {
    /// Video surfaces a broadcast's capture makes; the audio ring comes after them.
    package static let videoSurfaces = 4

    package var width: Int
    package var height: Int
    package var surfaceSize: Int
    package var descriptors: [Int32]

    package init(width: Int, height: Int, surfaceSize: Int, descriptors: [Int32]) {
        self.width = width
        self.height = height
        self.surfaceSize = surfaceSize
        self.descriptors = descriptors
    }
}
