/// What an app asks to capture and who it is, as the daemon tells the person.
public struct ConsentPrompt: Codable, Sendable, Equatable {
    public var requestID: String
    /// The app's executable, from the kernel (`/proc/PID/exe`), never from the app's own word.
    public var executable: String
    public var pid: Int32
    public var uid: UInt32
    public var screen: Bool
    public var appAudio: Bool
    public var microphone: Bool
    /// The consent page for this request, with its token; only agents ever see it.
    public var pageURL: String?
    /// The camera too (picture-in-picture in a recording); absent: no.
    public var camera: Bool?
    /// The app as the desktop names it: the `Name` of the `.desktop` entry installed for its
    /// executable. A name any program can take, so `executable` is shown beside it. Absent: none.
    public var appName: String?
    /// That entry's `Icon` (a theme name or a path), if it has one.
    public var appIcon: String?
    /// Of the screen, only the app's own windows, everything else black (in-app capture).
    /// Absent: the whole screen, as `screen` says (what a client that predates it shows).
    public var ownWindowsOnly: Bool?

    public init(requestID: String, executable: String, pid: Int32, uid: UInt32, screen: Bool, appAudio: Bool,
                microphone: Bool, pageURL: String?, camera: Bool? = nil, appName: String? = nil, appIcon: String? = nil,
                ownWindowsOnly: Bool? = nil) {
        self.ownWindowsOnly = ownWindowsOnly
        self.appName = appName
        self.appIcon = appIcon
        self.requestID = requestID
        self.executable = executable
        self.pid = pid
        self.uid = uid
        self.screen = screen
        self.appAudio = appAudio
        self.microphone = microphone
        self.pageURL = pageURL
        self.camera = camera
    }

    /// "screen, app audio and microphone"
    public var capturedThings: String {
        let things = [screen ? (ownWindowsOnly == true ? "its own windows" : "the screen") : nil, appAudio ? "app audio" : nil, microphone ? "the microphone" : nil,
                      camera == true ? "the camera" : nil]
            .compactMap { $0 }
        guard let last = things.last, things.count > 1 else { return things.first ?? "nothing" }
        return things.dropLast().joined(separator: ", ") + " and " + last
    }
}

/// A recording an app wants the person to see; the page URL carries a token only the person gets.
public struct PreviewOffer: Codable, Sendable, Equatable {
    public var recordingID: String
    public var executable: String
    public var pageURL: String

    public init(recordingID: String, executable: String, pageURL: String) {
        self.recordingID = recordingID
        self.executable = executable
        self.pageURL = pageURL
    }
}

public struct CaptureOptions: Codable, Sendable, Equatable {
    /// At most 60, as ReplayKit's in-app capture.
    public var fps: Int
    public var showCursor: Bool

    public init(fps: Int = 60, showCursor: Bool = false) {
        self.fps = fps
        self.showCursor = showCursor
    }
}

public struct CapturedFrameInfo: Codable, Sendable, Equatable {
    /// Seconds on the monotonic clock when the picture was taken.
    public var time: Double
    public var width: Int
    public var height: Int

    public init(time: Double, width: Int, height: Int) {
        self.time = time
        self.width = width
        self.height = height
    }
}

/// Why the screen counts as captured for an app that watches.
public enum CaptureReason: String, Codable, Sendable, CaseIterable, Comparable {
    case screenRecording
    case broadcast
    case mirroring
    /// Another app streams its own windows; this app's may be next to them.
    case inAppCapture

    public static func < (a: CaptureReason, b: CaptureReason) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!  // never nil: allCases lists every case
    }
}

public struct CaptureStatus: Codable, Sendable, Equatable {
    public var reasons: [CaptureReason]
    public var isCaptured: Bool { !reasons.isEmpty }

    public init(reasons: [CaptureReason]) {
        self.reasons = reasons.sorted()
    }
}

/// The broadcast picker an app asked for; the page URL carries a token only the person gets.
/// Since 2.4 (capability `nativePicker`) the offer carries what a window needs to show the
/// picker itself: its id for `startPickedBroadcast`, the app as the desktop names it, the
/// extensions to choose from, and what the app suggested (never a secret).
public struct PickerOffer: Codable, Sendable, Equatable {
    public var executable: String
    public var pageURL: String
    /// What the app would broadcast: the screen, or only its own windows.
    public var scope: BroadcastScope
    public var pickerID: String?
    public var appName: String?
    public var appIcon: String?
    public var extensions: [ExtensionInfo]?
    /// The microphone switch as the app asked for it; the person may turn it on.
    public var microphone: Bool?
    /// The preferred extension's fields the app filled in.
    public var suggestedSetup: [String: String]?

    public init(executable: String, pageURL: String, scope: BroadcastScope = .screen, pickerID: String? = nil,
                appName: String? = nil, appIcon: String? = nil, extensions: [ExtensionInfo]? = nil,
                microphone: Bool? = nil, suggestedSetup: [String: String]? = nil) {
        self.executable = executable
        self.pageURL = pageURL
        self.scope = scope
        self.pickerID = pickerID
        self.appName = appName
        self.appIcon = appIcon
        self.extensions = extensions
        self.microphone = microphone
        self.suggestedSetup = suggestedSetup
    }

    private enum CodingKeys: String, CodingKey {
        case executable, pageURL, scope, pickerID, appName, appIcon, extensions, microphone, suggestedSetup
    }

    /// An offer without a scope (it is optional on the wire) is of the screen.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        executable = try container.decode(String.self, forKey: .executable)
        pageURL = try container.decode(String.self, forKey: .pageURL)
        scope = try container.decodeIfPresent(BroadcastScope.self, forKey: .scope) ?? .screen
        pickerID = try container.decodeIfPresent(String.self, forKey: .pickerID)
        appName = try container.decodeIfPresent(String.self, forKey: .appName)
        appIcon = try container.decodeIfPresent(String.self, forKey: .appIcon)
        extensions = try container.decodeIfPresent([ExtensionInfo].self, forKey: .extensions)
        microphone = try container.decodeIfPresent(Bool.self, forKey: .microphone)
        suggestedSetup = try container.decodeIfPresent([String: String].self, forKey: .suggestedSetup)
    }
}
