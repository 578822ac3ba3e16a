import Foundation
import ReplayExtensionKit
import ReplayMedia
#if canImport(Glibc)
import Glibc
#endif

/// Misbehaves on purpose, as `--setup behaviour=…` says, so the tests can check that the
/// host contains it: the broadcast ends with a clear error and everything else goes on.
final class HostileHandler: BroadcastSampleHandler {
    private var behaviour = ""
    private var hoard: [UnsafeMutableRawPointer] = []

    override func broadcastStarted(setupInfo: [String: String]) {
        behaviour = setupInfo["behaviour"] ?? ""
        if behaviour == "finish-error" {
            // Gives up at once, as an extension whose service refused it would.
            finishBroadcast(error: "the service refused the stream")
        }
        if behaviour == "garbage" {
            // Bytes that are no message at all, straight onto the daemon's socket.
            var junk: [UInt8] = [0xff, 0xff, 0xff, 0x7f, 0xde, 0xad, 0xbe, 0xef]
            _ = send(3, &junk, junk.count, Int32(MSG_NOSIGNAL))
        }
    }

    override func processSampleBuffer(_ sample: SampleBuffer, type: SampleBufferType) {
        guard case .video(let frame) = sample else { return }
        switch behaviour {
        case "write-surface":
            // The surface is mapped read-only: this faults.
            frame.pixels.storage.bytes[0] = 0xff
        case "allocate":
            // 200 MB, touched 10 MB at a time, so the memory really is resident.
            while hoard.count < 20 {
                let block = malloc(10 << 20)!
                memset(block, 1, 10 << 20)
                hoard.append(block)
                usleep(20_000)
            }
        case "hang":
            while true { sleep(60) }
        case "crash":
            abort()
        case "slow":
            // Holds each picture (and so its surface) for 400 ms.
            usleep(400_000)
        default:
            break
        }
    }
}

BroadcastExtension.run(HostileHandler())
