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

    @Test mutating func onlyEnterOrSpaceOnAFocusedAllowAndReleasesOverItCount() {
        press.witnessed(.pointerRelease(onAllow: false))
        #expect(clicked() == false)
        press.witnessed(.keyPress(activates: true, allowFocused: false))
        #expect(clicked() == false)
        press.witnessed(.keyPress(activates: false, allowFocused: true))
        #expect(clicked() == false)
        press.witnessed(.keyPress(activates: true, allowFocused: true))
        #expect(clicked() == true)
        press.witnessed(.keyPress(activates: true, allowFocused: true))
        press.witnessed(.other)
        #expect(clicked() == false, "an event after the key press left it standing")
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
