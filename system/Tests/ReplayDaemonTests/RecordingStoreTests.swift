import Foundation
import ReplayCaptureModel
import ReplayDaemon
import ReplayIPC
import Testing

@Suite struct RecordingStoreTests {
    func temporaryStore() throws -> (RecordingStore, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)")
        return (try RecordingStore(directory: directory.appendingPathComponent("recordings")), directory)
    }

    @Test func theStoreIsPrivateToTheDaemonsUser() throws {
        let (store, directory) = try temporaryStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let mode = try FileManager.default.attributesOfItem(atPath: store.directory.path)[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    @Test(arguments: ["../../etc/passwd", "rec-../x", "rec-A", "/tmp/rec-1", "", "rec-" + String(repeating: "a", count: 80)])
    func idsThatCouldNameAPathAreRefused(id: String) throws {
        let (store, directory) = try temporaryStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(store.moviePath(id: id) == nil)
        #expect(store.info(id: id) == nil)
    }

    @Test func newIDsAreValidAndDistinct() throws {
        let (store, directory) = try temporaryStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ids = (0..<50).map { _ in store.newID() }
        #expect(Set(ids).count == 50)
        #expect(ids.allSatisfy(RecordingStore.isValidID))
        // The date and time are UTC's, digit for digit, whatever the machine's time zone.
        let dated = store.newID(now: Date(timeIntervalSince1970: 1_795_774_501.7))
        #expect(dated.hasPrefix("rec-20261127-101501-"), "\(dated)")
        #expect(store.newID(now: Date(timeIntervalSince1970: 0)).hasPrefix("rec-19700101-000000-"))
    }

    @Test func recordingsLeftRunningByADeadDaemonAreMarkedInterrupted() throws {
        let (store, directory) = try temporaryStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let id = store.newID()
        #expect(store.save(RecordingInfo(id: id, created: 1, state: .recording, duration: 9.5, frames: 285, dropped: 0,
                                         width: 1920, height: 1080, bytes: 0, error: nil)))
        // Bytes that are no fragmented movie: the figures saved last are all there is to go by.
        try Data(repeating: 7, count: 4096).write(to: try #require(store.moviePath(id: id)))
        let empty = store.newID()
        #expect(store.save(RecordingInfo(id: empty, created: 1, state: .recording, duration: 1, frames: 30, dropped: 0,
                                         width: 1920, height: 1080, bytes: 0, error: nil)))
        let reopened = try RecordingStore(directory: store.directory)
        let info = try #require(reopened.info(id: id))
        #expect(info.state == .interrupted)
        #expect(info.error != nil)
        #expect(info.duration == 9.5)
        // One whose writer died before writing a byte is not listed: it has no movie.
        #expect(reopened.info(id: empty) == nil)
    }
}
