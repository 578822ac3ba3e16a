import Foundation
import ReplayIPC
import Testing

/// The broadcast scope (the screen, or only the host app's windows) is optional on the wire:
/// a message without it must decode, as the screen.
@Suite struct BroadcastScopeTests {
    @Test func aRequestWithoutAScopeIsTheScreen() throws {
        let old = #"{"extensionID":"webrtc","setup":{"viewer-port":"auto"},"microphone":true,"fps":30}"#
        let request = try JSONDecoder().decode(BroadcastRequest.self, from: Data(old.utf8))
        #expect(request == BroadcastRequest(extensionID: "webrtc", setup: ["viewer-port": "auto"], microphone: true, fps: 30))
        #expect(request.scope == .screen)
        // And inside a request.
        let message = #"{"startBroadcast":{"request":{"extensionID":"file","setup":{},"microphone":false,"fps":60}}}"#
        #expect(try JSONDecoder().decode(ClientRequest.self, from: Data(message.utf8))
            == .startBroadcast(request: BroadcastRequest(extensionID: "file", fps: 60)))
    }

    @Test func aPickerRequestWithoutAScopeDecodesWithNone() throws {
        let old = #"{"showBroadcastPicker":{"preferredExtension":"webrtc","microphone":false}}"#
        let request = try JSONDecoder().decode(ClientRequest.self, from: Data(old.utf8))
        guard case .showBroadcastPicker(let preferred, let microphone, let scope, let setup) = request, setup == nil else {
            Issue.record("decoded as \(request)")
            return
        }
        #expect(preferred == "webrtc" && !microphone && scope == nil)
    }

    @Test func aPickerOfferSaysWhatWouldBeBroadcastAndAnOldOneIsTheScreen() throws {
        let old = #"{"executable":"/usr/bin/app","pageURL":"http://127.0.0.1:1/picker/x"}"#
        #expect(try JSONDecoder().decode(PickerOffer.self, from: Data(old.utf8)).scope == .screen)
        let offer = PickerOffer(executable: "/usr/bin/app", pageURL: "http://127.0.0.1:1/picker/x", scope: .app)
        #expect(try JSONDecoder().decode(PickerOffer.self, from: JSONEncoder().encode(offer)) == offer)
    }

    @Test func theScopeSurvivesARoundTrip() throws {
        for scope in BroadcastScope.allCases {
            let request = BroadcastRequest(extensionID: "webrtc", scope: scope)
            #expect(try JSONDecoder().decode(BroadcastRequest.self, from: JSONEncoder().encode(request)) == request)
            let picker = ClientRequest.showBroadcastPicker(preferredExtension: nil, microphone: true, scope: scope)
            #expect(try JSONDecoder().decode(ClientRequest.self, from: JSONEncoder().encode(picker)) == picker)
            let status = BroadcastStatus(id: "bc-1", extensionID: "webrtc", scope: scope, state: .live, broadcastURL: "http://127.0.0.1:1/x/")
            #expect(try JSONDecoder().decode(BroadcastStatus.self, from: JSONEncoder().encode(status)) == status)
        }
    }

    @Test func aStatusWithoutAScopeIsTheScreenAndAnUnknownScopeIsRefused() throws {
        let old = #"{"id":"bc-1","extensionID":"file","state":"live","framesSent":3,"framesDropped":0,"audioPeriodsSent":0,"messageBytesSent":300,"extensionPeakMemory":0,"serviceInfo":{}}"#
        let status = try JSONDecoder().decode(BroadcastStatus.self, from: Data(old.utf8))
        #expect(status.scope == .screen && status.framesSent == 3 && status.broadcastURL == nil)
        let unknown = #"{"extensionID":"file","setup":{},"microphone":false,"fps":30,"scope":"everyone"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(BroadcastRequest.self, from: Data(unknown.utf8)) }
    }
}
