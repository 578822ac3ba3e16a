import Foundation
import ReplayExtensionKit
import ReplayMedia
#if canImport(Glibc)
import Glibc
#endif

/// The descriptors this process had before it opened any of its own: what it inherited.
let inheritedDescriptors: [String] = {
    let listing = "/proc/self/fd"
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: listing)) ?? []
    return entries.compactMap { entry -> String? in
        // The listing's own descriptor names its directory; it is ours, not inherited.
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(listing)/\(entry)") else { return nil }
        return target.hasPrefix("/proc/") ? nil : "\(entry)=\(target)"
    }.sorted { Int($0.prefix { $0 != "=" }) ?? 0 < Int($1.prefix { $0 != "=" }) ?? 0 }
}()

/// Misbehaves on purpose, as `--setup behaviour=…` says, so the tests can check that the
/// host contains it: the broadcast ends with a clear error and everything else goes on.
final class HostileHandler: BroadcastSampleHandler {
    private var behaviour = ""
    private var hoard: [UnsafeMutableRawPointer] = []

    override func broadcastStarted(setupInfo: [String: String]) {
        behaviour = setupInfo["behaviour"] ?? ""
        if behaviour == "descriptors" {
            // What an attacker would look for first: anything of replayd's it could use.
            updateServiceInfo(["inherited": inheritedDescriptors.joined(separator: " ")])
        }
        if behaviour == "stderr-flood" {
            // Tries to rewrite the daemon's log from its start, then to fill the disk with it.
            _ = lseek(2, 0, SEEK_SET)
            _ = ftruncate(2, 0)
            let line = Array(repeating: UInt8(ascii: "x"), count: 199) + [UInt8(ascii: "\n")]
            for _ in 0..<100_000 { _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) } }
            updateServiceInfo(["flooded": "yes"])
        }
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
