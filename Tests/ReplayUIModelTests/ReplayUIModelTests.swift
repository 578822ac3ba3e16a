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
