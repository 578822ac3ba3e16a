import Foundation
import ReplayVirtualDesktop

// A separate X and audio client, like any app on the desktop: moving content and a
// flash-and-beep every second for lip-sync checks.
do {
    try DemoScene.run()
} catch {
    FileHandle.standardError.write(Data("replay-demo-scene: \(error)\n".utf8))
    exit(1)
}
