import ArgumentParser
import ReplayIPC

@main
struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Record the screen and its audio with OpenReplayKit.",
        discussion: """
            Capture happens in the replayd daemon, which this command starts when it is not \
            running. Recordings go to the daemon's private store; export them with \
            'replay recordings export'.

            On a machine with no DISPLAY, 'replay record' starts its own virtual display \
            (Xvfb, 1920x1080), an audio server with a null sink and a demo scene that flashes \
            and beeps once a second, and stops them afterwards.

            Examples:
              replay record --duration 10 --output demo.mp4
              replay record --mic            (until Ctrl-C)
              replay recordings list
              replay recordings export rec-20261121-134501-3fa2 --to talk.mp4
              replay consent-agent          (answer apps that ask to capture)
              replay broadcast start --extension file --setup dir=/tmp/out
            """,
        version: ReleaseVersion.current,
        subcommands: [Record.self, Pause.self, Resume.self, Recordings.self, Broadcast.self, Extensions.self, ConsentAgent.self, Status.self, Sources.self, Clip.self])
}

/// Where to find the daemon; shared by every subcommand.
struct DaemonOptions: ParsableArguments {
    @Option(help: "replayd's socket (default: the display's, $XDG_RUNTIME_DIR/openreplaykit/replayd-DISPLAY.sock (DISPLAY=:0 gives replayd-0.sock); where none listens there, the session's, replayd.sock, which systemd's replayd.socket opens; where neither does, replay starts replayd on the display's).")
    var socket: String?
}
