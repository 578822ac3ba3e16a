/// What part of the screen a recording shows; nil in `RecordingOptions` is the whole screen.
/// The movie keeps the size the area had when the recording started.
public enum CaptureArea: Codable, Sendable, Equatable {
    /// One monitor, by the name `listSources` gives it (RandR's, "DP-1").
    case monitor(name: String)
    /// One window by its X id, followed as it moves and resizes: fitted into the movie, with
    /// bars where its shape no longer matches.
    case window(id: UInt32)
    /// The window the person clicks next (the daemon waits for the click up to `seconds`).
    case pickWindow(seconds: Int)
    /// A fixed rectangle of the screen, in screen pixels; it must lie on the screen.
    case region(x: Int, y: Int, width: Int, height: Int)

    /// A window id as people write it: "0x1c00007" (xwininfo's, `replay sources`'s) or "29360135".
    public static func windowID(_ text: String) -> UInt32? {
        text.lowercased().hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
    }

    /// A region as X11's geometry writes it, "800x600+100+50" (width x height + left + top),
    /// without negative offsets; nil for anything else.
    public static func region(_ text: String) -> CaptureArea? {
        let parts = text.split(separator: "+", omittingEmptySubsequences: false)
        guard parts.count == 3, let x = Int(parts[1]), let y = Int(parts[2]), x >= 0, y >= 0 else { return nil }
        let sides = parts[0].lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard sides.count == 2, let width = Int(sides[0]), let height = Int(sides[1]), width >= 2, height >= 2 else { return nil }
        return .region(x: x, y: y, width: width, height: height)
    }
}

/// What can be recorded now, as `listSources` answers: the person's own tools only, since
/// window titles are the person's business.
public struct CaptureSources: Codable, Sendable, Equatable {
    public var monitors: [MonitorSource]
    /// Top-level windows on the screen, bottom to top.
    public var windows: [WindowSource]
    /// Outputs whose sound `--audio-device` records (app audio).
    public var audioOutputs: [AudioDeviceSource]
    /// Inputs `--mic-device` records.
    public var audioInputs: [AudioDeviceSource]
    /// What could not be listed, and why ("no audio server", "the desktop's portal chooses
    /// the screen: monitors and windows are not listed").
    public var notes: [String]

    public init(monitors: [MonitorSource], windows: [WindowSource], audioOutputs: [AudioDeviceSource],
                audioInputs: [AudioDeviceSource], notes: [String]) {
        self.monitors = monitors
        self.windows = windows
        self.audioOutputs = audioOutputs
        self.audioInputs = audioInputs
        self.notes = notes
    }
}

public struct MonitorSource: Codable, Sendable, Equatable {
    public var name: String
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public var primary: Bool

    public init(name: String, x: Int, y: Int, width: Int, height: Int, primary: Bool) {
        self.name = name
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.primary = primary
    }
}

public struct WindowSource: Codable, Sendable, Equatable {
    /// The application's window (what `xwininfo` and `xdotool` name), which `--window` takes.
    public var id: UInt32
    public var title: String
    /// The application, from the window's class (WM_CLASS), "" when it sets none.
    public var application: String
    /// The process that made the window, as the X server knows it; nil over TCP.
    public var pid: Int32?
    /// Where it is on the screen, clipped to it.
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(id: UInt32, title: String, application: String, pid: Int32?, x: Int, y: Int, width: Int, height: Int) {
        self.id = id
        self.title = title
        self.application = application
        self.pid = pid
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

public struct AudioDeviceSource: Codable, Sendable, Equatable {
    /// The audio server's name for it, which `--audio-device` and `--mic-device` take.
    public var name: String
    /// The person's name for it ("Built-in Audio Analog Stereo").
    public var description: String
    public var isDefault: Bool

    public init(name: String, description: String, isDefault: Bool) {
        self.name = name
        self.description = description
        self.isDefault = isDefault
    }
}

/// A camera drawn into a recording, picture-in-picture (ReplayKit's `isCameraEnabled`).
public struct CameraOverlay: Codable, Sendable, Equatable {
    public enum Corner: String, Codable, Sendable, CaseIterable {
        case topLeft, topRight, bottomLeft, bottomRight
    }

    /// A PipeWire camera node's name or serial; nil: the desktop's default camera.
    public var device: String?
    /// nil: bottom right.
    public var corner: Corner?
    /// The camera picture's width in percent of the recording's, 5 … 50; nil: 25.
    public var size: Int?

    public init(device: String? = nil, corner: Corner? = nil, size: Int? = nil) {
        self.device = device
        self.corner = corner
        self.size = size
    }
}

/// A clip buffer's state, as `clipStatus` and `clipBufferingStarted` tell it.
public struct ClipStatus: Codable, Sendable, Equatable {
    public var id: String
    /// Seconds a save can reach back now (grows to `length` after start).
    public var buffered: Double
    /// Seconds kept at most.
    public var length: Double
    /// Bytes of encoded video and audio held now.
    public var bytes: Int64
    /// Bytes held at most: older seconds go first when it is reached.
    public var byteBudget: Int64
    public var paused: Bool
    public var width: Int
    public var height: Int
    /// The clips saved from this buffer so far, oldest first (nil from older daemons).
    public var saves: [ClipSaveRecord]?
    /// True for a buffer longer than a minute, whose bytes are kept on disk (an unlinked file
    /// in the store), about a second of them in memory; nil for one kept in memory.
    public var onDisk: Bool?

    public init(id: String, buffered: Double, length: Double, bytes: Int64, byteBudget: Int64, paused: Bool, width: Int, height: Int,
                saves: [ClipSaveRecord]? = nil, onDisk: Bool? = nil) {
        self.id = id
        self.buffered = buffered
        self.length = length
        self.bytes = bytes
        self.byteBudget = byteBudget
        self.paused = paused
        self.width = width
        self.height = height
        self.saves = saves
        self.onDisk = onDisk
    }
}

/// One clip saved from a running buffer, in `ClipStatus.saves`: the person sees what a
/// hotkey press did, which otherwise only the store would show.
public struct ClipSaveRecord: Codable, Sendable, Equatable {
    /// What asked for the save.
    public enum Trigger: String, Codable, Sendable {
        /// The buffer's hotkey, pressed on the desktop.
        case hotkey
        /// A `saveClip` request (`replay clip save`, or an app).
        case command
    }

    /// The recording it made (an app's clip is sent, not kept: its id is gone from the store).
    public var id: String
    public var duration: Double
    /// When it was saved, in seconds since 1970.
    public var saved: Double
    public var trigger: Trigger

    public init(id: String, duration: Double, saved: Double, trigger: Trigger) {
        self.id = id
        self.duration = duration
        self.saved = saved
        self.trigger = trigger
    }
}

/// What `saveClip` wrote.
public struct ClipSaved: Codable, Sendable, Equatable {
    /// The new recording in the store (for an app: the clip it is being sent, not kept).
    public var id: String
    public var duration: Double
    /// The seconds asked for (nil: everything buffered); more than `duration` when less was buffered.
    public var asked: Double?
    public var frames: Int
    public var bytes: Int64

    public init(id: String, duration: Double, asked: Double?, frames: Int, bytes: Int64) {
        self.id = id
        self.duration = duration
        self.asked = asked
        self.frames = frames
        self.bytes = bytes
    }

    /// Less than asked, by more than a keyframe's spacing: buffering had not run that long.
    public var isShort: Bool { asked.map { duration < $0 - 1 } ?? false }
}
