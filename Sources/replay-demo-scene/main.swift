import Foundation
import ReplayVirtualDesktop

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--desktop" {
    // Runs a command in a virtual desktop of its own (how `replay record` brings one).
    let command = arguments.dropFirst().first == "--" ? Array(arguments.dropFirst(2)) : Array(arguments.dropFirst())
    exit(DesktopCommand.run(command))
}

// A separate X and audio client, like any app on the desktop: moving content and a
// flash-and-beep every second for lip-sync checks.
do {
    try DemoScene.run()
} catch {
    FileHandle.standardError.write(Data("replay-demo-scene: \(error)\n".utf8))
    exit(1)
}
