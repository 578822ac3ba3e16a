import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import ReplaySystem
import ReplayIPC
import ReplayVirtualDesktop

var arguments = Array(CommandLine.arguments.dropFirst())
// Diagnostics for the tests' logs (the beep stream starved), off for a person's terminal.
let verbose = arguments.first == "--verbose"
if verbose { arguments.removeFirst() }

let usage = """
    usage: replay-demo-scene [--help | --version | --verbose]
           replay-demo-scene --desktop|--wayland-desktop|--sway-desktop [--] COMMAND [ARGUMENT...]
           replay-demo-scene [--verbose] --beeps EPOCH_NS

    With no option (on a display, $DISPLAY): the demo scene, an X and audio client like any
    app: moving content, and once a second a full-screen white flash with a 50 ms 1 kHz beep,
    on whole seconds of the monotonic clock, to check lip sync in a recording. Ctrl-C ends it.

    --desktop           runs COMMAND in a virtual desktop of its own and stops the desktop when
                        COMMAND ends: a 1920x1080 Xvfb display, a PulseAudio server with a null
                        sink and the demo scene. COMMAND gets DISPLAY, PULSE_SERVER,
                        OPENREPLAYKIT_SOCKET (a replayd socket of the desktop's own) and
                        OPENREPLAYKIT_VIRTUAL_DESKTOP (the desktop's private folder). This is how
                        `replay record` records on a machine without a display.
    --wayland-desktop   the same on a headless Wayland desktop: GNOME's mutter, PipeWire, the
                        ScreenCast portal and pipewire-pulse, with a moving scene. COMMAND gets
                        WAYLAND_DISPLAY, XDG_RUNTIME_DIR, DBUS_SESSION_BUS_ADDRESS, PULSE_SERVER,
                        and OPENREPLAYKIT_SCREENCAST_TOKEN, a restore token that opens a screen
                        cast of the monitor without a dialog.
    --sway-desktop      the same with headless sway and xdg-desktop-portal-wlr (no token: the
                        portal's chooser picks the one output).
    --beeps EPOCH_NS    the scene's sound alone, beeping on whole seconds from EPOCH_NS.
    --verbose           (first) also says on standard error when the beep stream starved or
                        its latency moved, so its beeps were placed anew: a lip-sync check of
                        a recording made meanwhile measures the scene as well as the recorder.

    COMMAND shares this terminal; Ctrl-C, SIGTERM and SIGHUP are passed on to it. The exit
    status is COMMAND's (128 + the signal when one ended it), 1 when the desktop cannot
    start, 127 when COMMAND cannot be run.

    Examples:
      replay-demo-scene --desktop -- replay record --duration 5 --output demo.mp4
      replay-demo-scene --sway-desktop -- replay sources
    """

if let first = arguments.first, ["--help", "-h", "help"].contains(first) {
    print(usage)
    exit(0)
}
if arguments.first == "--version" {
    print(ReleaseVersion.current)
    exit(0)
}
if let unknown = arguments.first, unknown.hasPrefix("-"), !["--desktop", "--wayland-desktop", "--sway-desktop", "--beeps"].contains(unknown) {
    StandardStreams.writeError("replay-demo-scene: unknown option '\(unknown)'\n\n\(usage)\n")
    exit(2)
}
let desktops: [String: DesktopCommand.Kind] = ["--desktop": .x11, "--wayland-desktop": .wayland(.gnome), "--sway-desktop": .wayland(.sway)]
if let flag = arguments.first, let kind = desktops[flag] {
    // Runs a command in a virtual desktop of its own (how `replay record` brings one).
    let command = arguments.dropFirst().first == "--" ? Array(arguments.dropFirst(2)) : Array(arguments.dropFirst())
    exit(DesktopCommand.run(command, on: kind))
}

if arguments.first == "--beeps" {
    // The scene's sound alone, beeping on whole seconds of the monotonic clock from EPOCH_NS.
    guard arguments.count == 2, let epoch = Int64(arguments[1]) else {
        StandardStreams.writeError("usage: replay-demo-scene --beeps EPOCH_NS\n")
        exit(2)
    }
    DemoScene.playBeeps(epoch: epoch, verbose: verbose)
}

// A separate X and audio client, like any app on the desktop: moving content and a
// flash-and-beep every second for lip-sync checks.
do {
    try DemoScene.run(verbose: verbose)
} catch {
    StandardStreams.writeError("replay-demo-scene: \(error)\n")
    exit(1)
}
