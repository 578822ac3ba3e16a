import Foundation
import ReplayVirtualDesktop

let arguments = Array(CommandLine.arguments.dropFirst())
let desktops: [String: DesktopCommand.Kind] = ["--desktop": .x11, "--wayland-desktop": .wayland(.gnome), "--sway-desktop": .wayland(.sway)]
if let flag = arguments.first, let kind = desktops[flag] {
    // Runs a command in a virtual desktop of its own (how `replay record` brings one).
    let command = arguments.dropFirst().first == "--" ? Array(arguments.dropFirst(2)) : Array(arguments.dropFirst())
    exit(DesktopCommand.run(command, on: kind))
}

if arguments.first == "--beeps" {
    // The scene's sound alone, beeping on whole seconds of the monotonic clock from EPOCH_NS.
    guard arguments.count == 2, let epoch = Int64(arguments[1]) else {
        FileHandle.standardError.write(Data("usage: replay-demo-scene --beeps EPOCH_NS\n".utf8))
        exit(2)
    }
    DemoScene.playBeeps(epoch: epoch)
}

// A separate X and audio client, like any app on the desktop: moving content and a
// flash-and-beep every second for lip-sync checks.
do {
    try DemoScene.run()
} catch {
    FileHandle.standardError.write(Data("replay-demo-scene: \(error)\n".utf8))
    exit(1)
}
