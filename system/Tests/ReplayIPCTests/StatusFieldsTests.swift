import Foundation
import ReplayIPC
import Testing

/// `status`'s optional fields: an older daemon's answer (without them) still decodes, and a
/// newer one's say which recordings are paused and whether anybody is told of captures.
@Suite struct StatusFieldsTests {
    @Test func anOlderDaemonsStatusDecodesWithoutTheNewFields() throws {
        let old = #"{"status":{"status":{"activeRecordings":[],"mode":"user","pid":1}}}"#
        guard case .status(let status) = try JSONDecoder().decode(DaemonEvent.self, from: Data(old.utf8)) else {
            Issue.record("not a status")
            return
        }
        #expect(status.pausedRecordings == nil && status.indicator == nil)
    }

    @Test func pausedRecordingsAndTheIndicatorAreSaid() throws {
        let status = DaemonStatus(pid: 1, display: nil, activeRecordings: ["rec-1", "rec-2"], mode: .user, store: nil, pagesURL: nil,
                                  version: nil, pausedRecordings: ["rec-2"], indicator: IndicatorStatus(kind: .none, reason: "no desktop notification server"))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(DaemonEvent.status(status: status)), as: UTF8.self)
        #expect(json == #"{"status":{"status":{"activeRecordings":["rec-1","rec-2"],"indicator":{"kind":"none","#
            + #""reason":"no desktop notification server"},"mode":"user","pausedRecordings":["rec-2"],"pid":1}}}"#)
        #expect(try JSONDecoder().decode(DaemonEvent.self, from: Data(json.utf8)) == .status(status: status))
    }
}
