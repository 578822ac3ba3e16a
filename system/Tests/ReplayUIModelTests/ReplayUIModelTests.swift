import ReplayIPC
import ReplayUIModel
import Testing

@Suite struct AllowArmingTests {
    @Test func allowWaitsUntilTheDialogHasBeenShownAndFocusedForTheDelay() {
        var arming = AllowArming(delay: 1)
        #expect(!arming.isArmed(at: 0) && arming.armedFrom == nil)
        arming.shown(true, at: 10)
        #expect(!arming.isArmed(at: 20), "armed without the focus")
        arming.focused(true, at: 10.5)
        #expect(arming.armedFrom == 11.5)
        #expect(!arming.isArmed(at: 11.4))
        #expect(arming.isArmed(at: 11.5))
    }

    /// A window raised over the dialog takes the focus: the wait starts again when it comes back.
    @Test func losingTheFocusStartsTheWaitAgain() {
        var arming = AllowArming(delay: 1)
        arming.shown(true, at: 0)
        arming.focused(true, at: 0)
        #expect(arming.isArmed(at: 5))
        arming.focused(false, at: 5)
        #expect(!arming.isArmed(at: 5.1) && arming.armedFrom == nil)
        arming.focused(true, at: 6)
        #expect(!arming.isArmed(at: 6.9))
        #expect(arming.isArmed(at: 7))
        // Hidden and shown again: the same.
        arming.shown(false, at: 8)
        #expect(!arming.isArmed(at: 8))
        arming.shown(true, at: 9)
        #expect(arming.armedFrom == 10)
    }

    /// Focus reported again while focused (GTK notifies is-active on each change) keeps its start.
    @Test func aRepeatedFocusKeepsWhenItBegan() {
        var arming = AllowArming(delay: 1)
        arming.shown(true, at: 0)
        arming.focused(true, at: 0)
        arming.focused(true, at: 0.9)
        #expect(arming.isArmed(at: 1))
    }
}

@Suite struct PersonPressTests {
    /// What the dialog's Allow decides when clicked now.
    var press = PersonPress()

    mutating func clicked() -> Bool { press.clicked() }

    @Test mutating func aClickCountsOnlyWhileThePersonsInputOnAllowIsHandled() {
        #expect(clicked() == false, "a click with no input counted (an accessibility action)")
        press.witnessed(.pointerRelease(onAllow: true))
        #expect(clicked() == true)
        #expect(clicked() == false, "one press counted twice")
        press.witnessed(.pointerRelease(onAllow: true))
        press.eventHandled()
        #expect(clicked() == false, "a click after the event was handled counted")
    }

    @Test mutating func onlyEnterOrSpaceOnAFocusedAllowAndPointerReleasesOverItCount() {
        press.witnessed(.pointerRelease(onAllow: false))
        #expect(clicked() == false)
        press.witnessed(.key(activates: true, allowFocused: false))
        #expect(clicked() == false)
        press.witnessed(.key(activates: false, allowFocused: true))
        #expect(clicked() == false)
        press.witnessed(.key(activates: true, allowFocused: true))
        #expect(clicked() == true)
        press.witnessed(.key(activates: true, allowFocused: true))
        press.witnessed(.other)
        #expect(clicked() == false, "an event after the key press left it standing")
        // GTK clicks a button activated by Space or Enter when the key comes up.
        press.witnessed(.key(activates: true, allowFocused: true))
        press.eventHandled()
        press.witnessed(.key(activates: true, allowFocused: true))
        #expect(clicked() == true, "the key's release did not count")
    }
}

@Suite struct DaemonSocketsTests {
    @Test func onlyOurDaemonsSocketsAreAnsweredFor() {
        let sockets = DaemonSockets(environment: ["XDG_RUNTIME_DIR": "/run/user/1000", "OPENREPLAYKIT_SOCKET": "/tmp/ork/replayd.sock"])
        #expect(sockets.preferred == "/tmp/ork/replayd.sock")
        #expect(sockets.accept("/tmp/ork/./replayd.sock") == "/tmp/ork/replayd.sock")
        #expect(sockets.accept("/run/openreplaykit/replayd.sock") != nil)
        #expect(sockets.accept("/run/user/1000/openreplaykit/replayd.sock") != nil)
        #expect(sockets.accept("/tmp/decoy.sock") == nil)
        #expect(sockets.accept("/tmp/ork/../ork/other.sock") == nil)
    }
}

@Suite struct ConsentWordingTests {
    @Test func theAppIsNamedAsTheDesktopNamesItWithWhatTheKernelSaysBeside() {
        let prompt = ConsentPrompt(requestID: "r", executable: "/usr/bin/notes", pid: 42, uid: 1000, screen: true, appAudio: false,
                                   microphone: true, pageURL: nil, camera: true, appName: "Notes\u{1b}[2K")
        let wording = ConsentWording(prompt)
        #expect(wording.title == "Allow screen recording?")
        #expect(wording.heading == "Notes\\e[2K wants to record your screen")
        #expect(wording.identity == "/usr/bin/notes · process 42 · user 1000")
        #expect(wording.captured == ["Everything on your screen", "Your microphone", "Your camera"])
    }

    @Test func anInAppCaptureSaysOnlyItsOwnWindows() {
        let prompt = ConsentPrompt(requestID: "r", executable: "/opt/game/bin/game", pid: 1, uid: 0, screen: true, appAudio: true,
                                   microphone: false, pageURL: nil, ownWindowsOnly: true)
        let wording = ConsentWording(prompt)
        #expect(wording.title == "Share an app's windows?")
        #expect(wording.heading == "game wants to see its own windows")
        #expect(wording.captured == ["Its own windows (everything else is black)", "Sound your apps play"])
    }
}

@Suite struct ThumbnailTests {
    /// An I420 picture: black, with a white rectangle at (x, y, w, h).
    static func picture(width: Int, height: Int, white: (x: Int, y: Int, w: Int, h: Int)) -> [UInt8] {
        var bytes = [UInt8](repeating: 16, count: width * height) + [UInt8](repeating: 128, count: width * height / 2)
        for row in white.y..<(white.y + white.h) {
            for column in white.x..<(white.x + white.w) { bytes[row * width + column] = 235 }
        }
        return bytes
    }

    @Test func aPictureIsScaledToFitItsBoxKeepingItsShapeAndWhatIsWhere() throws {
        let bytes = Self.picture(width: 1024, height: 768, white: (x: 512, y: 384, w: 512, h: 384))
        let thumbnail = try #require(bytes.withUnsafeBytes { Thumbnail(i420: $0, width: 1024, height: 768, fitting: (360, 220)) })
        #expect(thumbnail.width == 293 && thumbnail.height == 220)
        func pixel(_ x: Int, _ y: Int) -> [UInt8] { Array(thumbnail.rgb[(y * thumbnail.width + x) * 3..<(y * thumbnail.width + x) * 3 + 3]) }
        #expect(pixel(10, 10) == [0, 0, 0], "limited-range black is not black")
        #expect(pixel(280, 200) == [255, 255, 255], "limited-range white is not white")
        #expect(pixel(140, 200) == [0, 0, 0] && pixel(280, 100) == [0, 0, 0])
    }

    @Test func aShortOrEmptyPictureGivesNone() {
        let short = [UInt8](repeating: 0, count: 100)
        #expect(short.withUnsafeBytes { Thumbnail(i420: $0, width: 64, height: 64, fitting: (32, 32)) } == nil)
        #expect(short.withUnsafeBytes { Thumbnail(i420: $0, width: 0, height: 0, fitting: (32, 32)) } == nil)
    }

    /// A small picture is never enlarged.
    @Test func aSmallPictureKeepsItsSize() throws {
        let bytes = Self.picture(width: 64, height: 48, white: (x: 0, y: 0, w: 2, h: 2))
        let thumbnail = try #require(bytes.withUnsafeBytes { Thumbnail(i420: $0, width: 64, height: 48, fitting: (360, 220)) })
        #expect(thumbnail.width == 64 && thumbnail.height == 48 && thumbnail.rgb.count == 64 * 48 * 3)
    }
}

@Suite struct PickerFormTests {
    static let file = ExtensionManifest(id: "file", displayName: "Write to a file", executable: "x",
                                        setupFields: [.init(key: "dir", label: "Directory", kind: .directory, required: true)])
    static let call = ExtensionManifest(id: "call", displayName: "Video call", executable: "y",
                                        setupFields: [.init(key: "room", label: "Room", required: true),
                                                      .init(key: "pin", label: "PIN", kind: .secret),
                                                      .init(key: "name", label: "Your name")])

    static func offer(_ manifests: [ExtensionManifest], scope: BroadcastScope = .screen, setup: [String: String] = [:]) -> PickerOffer {
        PickerOffer(executable: "/usr/bin/notes\u{1b}[2J", pageURL: "u", scope: scope, pickerID: "picker-1",
                    extensions: manifests.map { ExtensionInfo(manifest: $0, manifestPath: "/m") }, microphone: true, suggestedSetup: setup)
    }

    @Test func itSaysWhoAsksAndWhatWouldBeBroadcastWithControlCharactersShown() {
        let screen = PickerForm(Self.offer([Self.file]))
        #expect(!screen.heading.contains("\u{1b}") && screen.heading.hasSuffix("wants to go live with your screen"))
        #expect(screen.scopeLine == "Everything on your screen is broadcast.")
        #expect(screen.servicesLine == "Broadcast with Write to a file.")
        #expect(screen.microphone)
        let app = PickerForm(Self.offer([Self.file, Self.call], scope: .app))
        #expect(app.heading.hasSuffix("wants to go live with its own windows"))
        #expect(app.servicesLine == "Broadcast with:")
        #expect(PickerForm(Self.offer([])).servicesLine == "No broadcast service is installed.")
    }

    /// The app's suggestions fill in the service it named, never a secret, never another service's.
    @Test func theAppsSuggestionsFillInOnlyItsServicesPlainSettings() {
        let form = PickerForm(Self.offer([Self.call], setup: ["room": "1234", "pin": "0000"]))
        #expect(form.initialValue(of: Self.call.setupFields[0], in: Self.call) == "1234")
        #expect(form.initialValue(of: Self.call.setupFields[1], in: Self.call) == "", "a secret was filled in by the app")
        let both = PickerForm(Self.offer([Self.file, Self.call], setup: ["room": "1234"]))
        #expect(both.initialValue(of: Self.call.setupFields[0], in: Self.call) == "", "a suggestion for no service in particular")
    }

    @Test func whatIsSentIsWhatThePersonGaveAndWhatIsMissingIsSaid() {
        let form = PickerForm(Self.offer([Self.call]))
        #expect(form.setup(for: Self.call, values: ["room": "  ", "name": "Ann"]) == .failure(.init(description: "Room is needed")))
        #expect(form.setup(for: Self.call, values: ["room": " 42 ", "pin": " 1 2 ", "name": ""]) == .success(["room": "42", "pin": " 1 2 "]))
    }

    @Test func theLiveLineSaysWhereToWatch() {
        var status = BroadcastStatus(id: "b", extensionID: "file", state: .live, serviceInfo: ["connection": "live"])
        status.broadcastURL = "file:///tmp/x"
        #expect(PickerForm.liveLine(status) == "Live with file.\nWatch at: file:///tmp/x\nconnection: live")
    }
}

@Suite struct TrimSpanTests {
    @Test func anUntrimmedSpanExportsTheWholeMovie() {
        let span = TrimSpan(duration: 10)
        #expect(span.exportSpan == nil && span.summary == "Keeps all 0:10.0")
    }

    @Test func theStartAndEndStayInOrderAndWithinTheMovie() {
        var span = TrimSpan(duration: 10)
        span.setStart(3)
        span.setEnd(7)
        #expect(span.exportSpan! == (3, 7))
        #expect(span.summary == "Keeps 0:03.0 to 0:07.0 (4.0 s of 10.0 s)")
        span.setStart(9)
        #expect(span.start == 7 - TrimSpan.shortest, "the start passed the end")
        span.setEnd(-4)
        #expect(span.end == span.start + TrimSpan.shortest)
        span.setEnd(.nan)
        span.setStart(-1)
        #expect(span.start == 0)
        span.setEnd(99)
        #expect(span.end == 10 && span.exportSpan == nil)
    }

    /// The player learns the movie's length after the window opens: an untouched end follows it.
    @Test func anUntouchedEndFollowsTheDurationThePlayerLearns() {
        var span = TrimSpan(duration: 0)
        span.setDuration(10.04)
        #expect(span.end == 10.04 && span.exportSpan == nil)
        span.setEnd(6)
        span.setDuration(12)
        #expect(span.end == 6)
        #expect(TrimSpan(duration: 61.25).summary == "Keeps all 1:01.3")
    }
}

extension PickerFormTests {
    static let stream = ExtensionManifest(
        id: "stream", displayName: "Stream", executable: "z",
        setupFields: [.init(key: "mode", label: "Mode", kind: .choice, defaultValue: "video", choices: ["video", "screencast"]),
                      .init(key: "fps", label: "Frame rate", kind: .number, required: true, defaultValue: "30", minimum: 1, maximum: 30)],
        description: "Streams \u{1b}[31msomewhere")

    /// Numbers and choices start at their defaults (an app's suggestion only where the field
    /// takes it), and what the person types is checked against their range and choices.
    @Test func numbersAndChoicesStartAtTheirDefaultsAndAreChecked() {
        let form = PickerForm(Self.offer([Self.stream], setup: ["fps": "300", "mode": "screencast"]))
        #expect(form.initialValue(of: Self.stream.setupFields[0], in: Self.stream) == "screencast")
        #expect(form.initialValue(of: Self.stream.setupFields[1], in: Self.stream) == "30", "an out-of-range suggestion was shown")
        #expect(form.descriptionLine(of: Self.stream).map { !$0.contains("\u{1b}") && $0.hasPrefix("Streams") } == true)
        #expect(form.setup(for: Self.stream, values: ["fps": "25", "mode": "video"]) == .success(["fps": "25", "mode": "video"]))
        // Empty: the default is replayd's to apply, and a required field with one is not missing.
        #expect(form.setup(for: Self.stream, values: [:]) == .success([:]))
        #expect(form.setup(for: Self.stream, values: ["fps": "31"]) == .failure(.init(description: "Frame rate: a number from 1 to 30")))
        #expect(form.setup(for: Self.stream, values: ["fps": "fast"]) == .failure(.init(description: "Frame rate: a number from 1 to 30")))
        #expect(form.setup(for: Self.stream, values: ["mode": "huge"]) == .failure(.init(description: "Mode: choose one")))
    }
}
