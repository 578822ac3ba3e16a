import Foundation
import ReplayIPC
import ReplayMedia
import Testing

/// The exact JSON of one instance of every request and event, as docs/protocol.md shows it:
/// renaming a case or a field, or dropping a label, breaks a test here. The goldens are
/// written with sorted keys and unescaped slashes; what is sent has the same keys and values.
@Suite struct MessageGoldenTests {
    /// Adding a case to ClientRequest makes this switch fail to compile until it has a golden.
    static func golden(_ request: ClientRequest) -> String {
        switch request {
        case .hello: #"{"hello":{"capabilities":["skipsUnknownEvents"],"client":"replay","minorVersion":1,"protocolVersion":2}}"#
        case .startRecording:
            #"{"startRecording":{"options":{"appAudio":true,"duration":5,"fps":30,"microphone":true,"showCursor":false,"#
                + #""video":{"bitRate":4000000,"crf":23,"keyframeInterval":60,"preset":"veryfast"}}}}"#
        case .stopRecording: #"{"stopRecording":{}}"#
        case .pauseRecording: #"{"pauseRecording":{"id":"rec-1"}}"#
        case .resumeRecording: #"{"resumeRecording":{}}"#
        case .listRecordings: #"{"listRecordings":{}}"#
        case .exportRecording: #"{"exportRecording":{"id":"rec-1"}}"#
        case .status: #"{"status":{}}"#
        case .deleteRecording: #"{"deleteRecording":{"id":"rec-1"}}"#
        case .previewURL: #"{"previewURL":{"id":"rec-1"}}"#
        case .registerConsentAgent: #"{"registerConsentAgent":{}}"#
        case .answerConsent: #"{"answerConsent":{"allow":true,"requestID":"consent-1"}}"#
        case .watchConsentPreview: #"{"watchConsentPreview":{"requestID":"consent-1"}}"#
        case .discardRecording: #"{"discardRecording":{"id":"rec-1"}}"#
        case .showPreview: #"{"showPreview":{"id":"rec-1"}}"#
        case .startCapture: #"{"startCapture":{"options":{"fps":30,"showCursor":true}}}"#
        case .stopCapture: #"{"stopCapture":{}}"#
        case .watchCaptureState: #"{"watchCaptureState":{}}"#
        case .protectWindow: #"{"protectWindow":{"id":4194305}}"#
        case .unprotectWindow: #"{"unprotectWindow":{"id":4194305}}"#
        case .listExtensions: #"{"listExtensions":{}}"#
        case .startBroadcast:
            #"{"startBroadcast":{"request":{"extensionID":"rtmp","fps":30,"microphone":false,"scope":"screen","#
                + #""setup":{"url":"rtmp://example.com/live/key"}}}}"#
        case .pauseBroadcast: #"{"pauseBroadcast":{"id":"bc-1"}}"#
        case .resumeBroadcast: #"{"resumeBroadcast":{}}"#
        case .stopBroadcast: #"{"stopBroadcast":{"id":"bc-1"}}"#
        case .broadcastStatus: #"{"broadcastStatus":{}}"#
        case .showBroadcastPicker: #"{"showBroadcastPicker":{"microphone":true,"preferredExtension":"webrtc","scope":"app"}}"#
        case .startPickedBroadcast:
            #"{"startPickedBroadcast":{"extensionID":"file","microphone":false,"pickerID":"picker-1","setup":{"directory":"/tmp"}}}"#
        case .stopPickedBroadcast: #"{"stopPickedBroadcast":{"pickerID":"picker-1"}}"#
        case .forgetScreenChoice: #"{"forgetScreenChoice":{}}"#
        case .listSources: #"{"listSources":{}}"#
        case .startClipBuffering:
            #"{"startClipBuffering":{"byteBudget":268435456,"hotkey":"Ctrl+Alt+S","length":30,"options":{"appAudio":true,"#
                + #""fps":30,"microphone":false,"showCursor":true,"video":{"crf":23,"preset":"ultrafast"}}}}"#
        case .saveClip: #"{"saveClip":{"last":15}}"#
        case .clipStatus: #"{"clipStatus":{}}"#
        case .stopClipBuffering: #"{"stopClipBuffering":{}}"#
        }
    }

    static let requests: [ClientRequest] = [
        .hello(protocolVersion: 2, client: "replay", minorVersion: 1, capabilities: ["skipsUnknownEvents"]),
        .startRecording(options: RecordingOptions(
            duration: 5, fps: 30, microphone: true, appAudio: true, showCursor: false,
            video: VideoEncoding(preset: "veryfast", bitRate: 4_000_000, crf: 23, keyframeInterval: 60))),
        .stopRecording,
        .pauseRecording(id: "rec-1"),
        .resumeRecording(id: nil),
        .listRecordings,
        .exportRecording(id: "rec-1"),
        .status,
        .deleteRecording(id: "rec-1"),
        .previewURL(id: "rec-1"),
        .registerConsentAgent,
        .answerConsent(requestID: "consent-1", allow: true),
        .watchConsentPreview(requestID: "consent-1"),
        .discardRecording(id: "rec-1"),
        .showPreview(id: "rec-1"),
        .startCapture(options: CaptureOptions(fps: 30, showCursor: true)),
        .stopCapture,
        .watchCaptureState,
        .protectWindow(id: 4_194_305),
        .unprotectWindow(id: 4_194_305),
        .listExtensions,
        .startBroadcast(request: BroadcastRequest(extensionID: "rtmp", setup: ["url": "rtmp://example.com/live/key"], fps: 30)),
        .pauseBroadcast(id: "bc-1"),
        .resumeBroadcast(id: nil),
        .stopBroadcast(id: "bc-1"),
        .broadcastStatus,
        .showBroadcastPicker(preferredExtension: "webrtc", microphone: true, scope: .app),
        .startPickedBroadcast(pickerID: "picker-1", extensionID: "file", setup: ["directory": "/tmp"], microphone: false),
        .stopPickedBroadcast(pickerID: "picker-1"),
        .forgetScreenChoice,
        .listSources,
        .startClipBuffering(options: RecordingOptions(), length: 30, byteBudget: 256 << 20, hotkey: "Ctrl+Alt+S"),
        .saveClip(last: 15),
        .clipStatus,
        .stopClipBuffering,
    ]

    /// Adding a case to DaemonEvent makes this switch fail to compile until it has a golden.
    static func golden(_ event: DaemonEvent) -> String {
        switch event {
        case .welcome: #"{"welcome":{"capabilities":["unsupportedRequests"],"daemonPID":4242,"minorVersion":1,"protocolVersion":2}}"#
        case .recordingStarted: #"{"recordingStarted":{"recording":{"height":1080,"id":"rec-1","warnings":["no audio server"],"width":1920}}}"#
        case .progress: #"{"progress":{"progress":{"bytes":123456,"dropped":0,"elapsed":1.5,"frames":45}}}"#
        case .recordingFinished: #"{"recordingFinished":{"summary":{"dropped":1,"duration":5,"frames":150,"id":"rec-1"}}}"#
        case .recordingPaused: #"{"recordingPaused":{"id":"rec-1"}}"#
        case .recordingResumed: #"{"recordingResumed":{"id":"rec-1"}}"#
        case .recordings:
            #"{"recordings":{"list":[{"bytes":2000000,"codec":"hevc","created":1700000000.5,"dropped":1,"duration":5,"error":"No space left on device","#
                + #""frames":150,"height":1080,"id":"rec-1","state":"interrupted","width":1920}]}}"#
        case .exportBegin: #"{"exportBegin":{"size":2000000}}"#
        case .exportChunk: #"{"exportChunk":{}}"#
        case .exportEnd: #"{"exportEnd":{}}"#
        case .status:
            #"{"status":{"status":{"activeRecordings":["rec-1"],"capture":{"backend":"portal","reason":"a Wayland session: "#
                + #"WAYLAND_DISPLAY=wayland-0","remembersScreenChoice":true},"display":":0","mode":"user","pagesURL":"http://127.0.0.1:8765","#
                + #""pid":4242,"store":"/home/ada/.local/share/openreplaykit/recordings","version":"0.25.0"}}}"#
        case .recordingDeleted: #"{"recordingDeleted":{"id":"rec-1"}}"#
        case .previewURL: #"{"previewURL":{"url":"http://127.0.0.1:8765/preview/rec-1?token=t0k3n"}}"#
        case .waitingForConsent: #"{"waitingForConsent":{}}"#
        case .consentAgentRegistered: #"{"consentAgentRegistered":{}}"#
        case .consentRequested:
            #"{"consentRequested":{"prompt":{"appAudio":true,"executable":"/usr/bin/app","microphone":false,"#
                + #""pageURL":"http://127.0.0.1:8765/consent/consent-1?token=t0k3n","pid":77,"requestID":"consent-1","screen":true,"uid":1000}}}"#
        case .consentResolved: #"{"consentResolved":{"allowed":true,"requestID":"consent-1"}}"#
        case .consentPreviewFrame: #"{"consentPreviewFrame":{"frame":{"height":480,"time":12.5,"width":640},"requestID":"consent-1"}}"#
        case .consentPreviewEnded: #"{"consentPreviewEnded":{"reason":"no preview through the desktop's ScreenCast portal","requestID":"consent-1"}}"#
        case .previewOffered:
            #"{"previewOffered":{"offer":{"executable":"/usr/bin/app","pageURL":"http://127.0.0.1:8765/preview/rec-1?token=t0k3n","#
                + #""recordingID":"rec-1"}}}"#
        case .previewShown: #"{"previewShown":{}}"#
        case .captureStarted: #"{"captureStarted":{"fps":30,"height":480,"width":640}}"#
        case .capturedFrame: #"{"capturedFrame":{"frame":{"height":480,"time":12.5,"width":640}}}"#
        case .captureStopped: #"{"captureStopped":{"error":"the display went away"}}"#
        case .captureState: #"{"captureState":{"status":{"reasons":["screenRecording","broadcast"]}}}"#
        case .windowProtected: #"{"windowProtected":{"id":4194305}}"#
        case .windowUnprotected: #"{"windowUnprotected":{"id":4194305}}"#
        case .extensions:
            #"{"extensions":{"list":[{"manifest":{"displayName":"File","executable":"replay-file-extension","#
                + #""extensionPoint":"broadcast-services-upload","id":"file","#
                + #""setupFields":[{"key":"directory","kind":"directory","label":"Directory","required":true}]},"#
                + #""manifestPath":"/usr/share/openreplaykit/extensions/file.json"}]}}"#
        case .broadcastStarted:
            #"{"broadcastStarted":{"status":{"audioPeriodsSent":500,"broadcastURL":"https://example.com/live/1","extensionID":"rtmp","#
                + #""extensionPeakMemory":20000000,"framesDropped":2,"framesSent":300,"id":"bc-1","messageBytesSent":30000,"#
                + #""scope":"screen","serviceInfo":{"ingest":"rtmp://example.com/live"},"state":"live"}}}"#
        case .broadcasts:
            #"{"broadcasts":{"list":[{"audioPeriodsSent":0,"extensionID":"file","extensionPeakMemory":0,"framesDropped":0,"#
                + #""framesSent":0,"id":"bc-1","lastError":"the extension crashed","messageBytesSent":0,"scope":"screen","#
                + #""serviceInfo":{},"state":"failed"}]}}"#
        case .pickerShown: #"{"pickerShown":{}}"#
        case .pickerOffered:
            #"{"pickerOffered":{"offer":{"executable":"/usr/bin/app","pageURL":"http://127.0.0.1:8765/picker/p-1?token=t0k3n","scope":"app"}}}"#
        case .pickerClosed: #"{"pickerClosed":{"pickerID":"picker-1"}}"#
        case .broadcastUpdated:
            #"{"broadcastUpdated":{"status":{"audioPeriodsSent":0,"extensionID":"webrtc","extensionPeakMemory":0,"framesDropped":0,"#
                + #""framesSent":0,"id":"bc-2","messageBytesSent":0,"scope":"app","serviceInfo":{},"state":"paused"}}}"#
        case .screenChoiceForgotten: #"{"screenChoiceForgotten":{}}"#
        case .waitingForScreenChoice: #"{"waitingForScreenChoice":{"seconds":60}}"#
        case .sources:
            #"{"sources":{"sources":{"audioInputs":[{"description":"Microphone","isDefault":true,"name":"mic"}],"#
                + #""audioOutputs":[{"description":"Speakers","isDefault":false,"name":"speakers"}],"#
                + #""monitors":[{"height":1080,"name":"DP-1","primary":true,"width":1920,"x":0,"y":0}],"notes":["no audio server"],"#
                + #""windows":[{"application":"Firefox","height":600,"id":29360135,"pid":77,"title":"Notes","width":800,"x":10,"y":20}]}}}"#
        case .waitingForWindowPick: #"{"waitingForWindowPick":{"seconds":60}}"#
        case .clipBufferingStarted:
            #"{"clipBufferingStarted":{"status":{"buffered":0,"byteBudget":268435456,"bytes":0,"height":1080,"id":"clips-1","#
                + #""length":30,"paused":false,"width":1920}}}"#
        case .clipSaved: #"{"clipSaved":{"clip":{"asked":30,"bytes":5000000,"duration":12.5,"frames":375,"id":"rec-2"}}}"#
        case .clipStatus:
            #"{"clipStatus":{"status":{"buffered":30,"byteBudget":268435456,"bytes":9000000,"height":1080,"id":"clips-1","#
                + #""length":30,"paused":true,"saves":[{"duration":30.5,"id":"rec-3","saved":1700000000.5,"trigger":"hotkey"}],"width":1920}}}"#
        case .clipBufferingStopped: #"{"clipBufferingStopped":{}}"#
        case .error:
            #"{"error":{"code":"protocolVersionMismatch","message":"replayd speaks protocol 2 and this client speaks protocol 1; "#
                + #"update the client or the daemon so they match"}}"#
        }
    }

    static let events: [DaemonEvent] = [
        .welcome(protocolVersion: 2, daemonPID: 4242, minorVersion: 1, capabilities: ["unsupportedRequests"]),
        .recordingStarted(recording: RecordingStarted(id: "rec-1", width: 1920, height: 1080, warnings: ["no audio server"])),
        .progress(progress: RecordingProgress(elapsed: 1.5, frames: 45, dropped: 0, bytes: 123_456)),
        .recordingFinished(summary: RecordingSummary(id: "rec-1", duration: 5, frames: 150, dropped: 1, error: nil)),
        .recordingPaused(id: "rec-1"),
        .recordingResumed(id: "rec-1"),
        .recordings(list: [RecordingInfo(
            id: "rec-1", created: 1_700_000_000.5, state: .interrupted, duration: 5, frames: 150, dropped: 1, width: 1920, height: 1080,
            bytes: 2_000_000, error: "No space left on device", codec: .hevc)]),
        .exportBegin(size: 2_000_000),
        .exportChunk,
        .exportEnd,
        .status(status: DaemonStatus(
            pid: 4242, display: ":0", activeRecordings: ["rec-1"], mode: .user, store: "/home/ada/.local/share/openreplaykit/recordings",
            pagesURL: "http://127.0.0.1:8765",
            capture: CaptureBackendInfo(backend: "portal", reason: "a Wayland session: WAYLAND_DISPLAY=wayland-0", remembersScreenChoice: true),
            version: "0.25.0")),
        .recordingDeleted(id: "rec-1"),
        .previewURL(url: "http://127.0.0.1:8765/preview/rec-1?token=t0k3n"),
        .waitingForConsent,
        .consentAgentRegistered,
        .consentRequested(prompt: ConsentPrompt(
            requestID: "consent-1", executable: "/usr/bin/app", pid: 77, uid: 1000, screen: true, appAudio: true, microphone: false,
            pageURL: "http://127.0.0.1:8765/consent/consent-1?token=t0k3n")),
        .consentResolved(requestID: "consent-1", allowed: true),
        .consentPreviewFrame(requestID: "consent-1", frame: CapturedFrameInfo(time: 12.5, width: 640, height: 480)),
        .consentPreviewEnded(requestID: "consent-1", reason: "no preview through the desktop's ScreenCast portal"),
        .previewOffered(offer: PreviewOffer(
            recordingID: "rec-1", executable: "/usr/bin/app", pageURL: "http://127.0.0.1:8765/preview/rec-1?token=t0k3n")),
        .previewShown,
        .captureStarted(width: 640, height: 480, fps: 30),
        .capturedFrame(frame: CapturedFrameInfo(time: 12.5, width: 640, height: 480)),
        .captureStopped(error: "the display went away"),
        .captureState(status: CaptureStatus(reasons: [.broadcast, .screenRecording])),
        .windowProtected(id: 4_194_305),
        .windowUnprotected(id: 4_194_305),
        .extensions(list: [ExtensionInfo(
            manifest: ExtensionManifest(
                id: "file", displayName: "File", executable: "replay-file-extension",
                setupFields: [.init(key: "directory", label: "Directory", kind: .directory, required: true)]),
            manifestPath: "/usr/share/openreplaykit/extensions/file.json")]),
        .broadcastStarted(status: BroadcastStatus(
            id: "bc-1", extensionID: "rtmp", scope: .screen, state: .live, framesSent: 300, framesDropped: 2, audioPeriodsSent: 500,
            messageBytesSent: 30_000, extensionPeakMemory: 20_000_000, serviceInfo: ["ingest": "rtmp://example.com/live"],
            broadcastURL: "https://example.com/live/1")),
        .broadcasts(list: [BroadcastStatus(id: "bc-1", extensionID: "file", state: .failed, lastError: "the extension crashed")]),
        .pickerShown,
        .pickerOffered(offer: PickerOffer(executable: "/usr/bin/app", pageURL: "http://127.0.0.1:8765/picker/p-1?token=t0k3n", scope: .app)),
        .pickerClosed(pickerID: "picker-1"),
        .broadcastUpdated(status: BroadcastStatus(id: "bc-2", extensionID: "webrtc", scope: .app, state: .paused)),
        .screenChoiceForgotten,
        .waitingForScreenChoice(seconds: 60),
        .sources(sources: CaptureSources(
            monitors: [MonitorSource(name: "DP-1", x: 0, y: 0, width: 1920, height: 1080, primary: true)],
            windows: [WindowSource(id: 29_360_135, title: "Notes", application: "Firefox", pid: 77, x: 10, y: 20, width: 800, height: 600)],
            audioOutputs: [AudioDeviceSource(name: "speakers", description: "Speakers", isDefault: false)],
            audioInputs: [AudioDeviceSource(name: "mic", description: "Microphone", isDefault: true)], notes: ["no audio server"])),
        .waitingForWindowPick(seconds: 60),
        .clipBufferingStarted(status: ClipStatus(id: "clips-1", buffered: 0, length: 30, bytes: 0, byteBudget: 256 << 20, paused: false,
                                                 width: 1920, height: 1080)),
        .clipSaved(clip: ClipSaved(id: "rec-2", duration: 12.5, asked: 30, frames: 375, bytes: 5_000_000)),
        .clipStatus(status: ClipStatus(id: "clips-1", buffered: 30, length: 30, bytes: 9_000_000, byteBudget: 256 << 20, paused: true,
                                       width: 1920, height: 1080,
                                       saves: [ClipSaveRecord(id: "rec-3", duration: 30.5, saved: 1_700_000_000.5, trigger: .hotkey)])),
        .clipBufferingStopped,
        .error(code: .protocolVersionMismatch, message: ClientProtocol.mismatch(daemon: 2, client: 1)),
    ]

    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func name(_ value: some Any) -> String { String(String(describing: value).prefix { $0 != "(" }) }

    @Test func everyRequestHasItsPinnedJSON() throws {
        // One sample of every case: a new case needs a sample here as well as a golden.
        #expect(Set(Self.requests.map(\.name)).count == 35 && Self.requests.count == 35)
        for request in Self.requests {
            #expect(try Self.encode(request) == Self.golden(request), "\(request.name)")
            // What another client sends, as written in docs/protocol.md, is understood.
            #expect(try JSONDecoder().decode(ClientRequest.self, from: Data(Self.golden(request).utf8)) == request)
        }
    }

    @Test func everyEventHasItsPinnedJSON() throws {
        #expect(Set(Self.events.map { Self.name($0) }).count == 43 && Self.events.count == 43)
        for event in Self.events {
            #expect(try Self.encode(event) == Self.golden(event), "\(Self.name(event))")
            #expect(try JSONDecoder().decode(DaemonEvent.self, from: Data(Self.golden(event).utf8)) == event)
        }
    }

    @Test func noMessageHasPositionalFields() throws {
        for request in Self.requests { #expect(try !Self.encode(request).contains("\"_0\""), "\(request.name)") }
        for event in Self.events { #expect(try !Self.encode(event).contains("\"_0\""), "\(Self.name(event))") }
    }

    /// The protocol description names every request and event, so it cannot silently fall behind.
    @Test func theProtocolDocumentNamesEveryMessage() throws {
        let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/protocol.md")
        let text = try String(contentsOf: document, encoding: .utf8)
        for name in Self.requests.map(\.name) + Self.events.map({ Self.name($0) }) {
            #expect(text.contains("`\(name)`"), "docs/protocol.md does not mention `\(name)`")
        }
        for code in ErrorCode.known {
            #expect(text.contains("`\(code)`"), "docs/protocol.md does not mention the error code `\(code)`")
        }
        for capability in ClientProtocol.daemonCapabilities + ClientProtocol.clientCapabilities {
            #expect(text.contains("`\(capability)`"), "docs/protocol.md does not mention the capability `\(capability)`")
        }
    }

    /// What a client and a daemon of 2.0 send (no minor version, no capabilities) still reads,
    /// and a code of a later version still decodes as an error (docs/protocol.md, "Growth").
    @Test func the20HandshakeAndUnknownErrorCodesDecode() throws {
        let decoder = JSONDecoder()
        #expect(try decoder.decode(ClientRequest.self, from: Data(#"{"hello":{"protocolVersion":2,"client":"replay"}}"#.utf8))
            == .hello(protocolVersion: 2, client: "replay", minorVersion: nil, capabilities: nil))
        #expect(try decoder.decode(DaemonEvent.self, from: Data(#"{"welcome":{"protocolVersion":2,"daemonPID":4242}}"#.utf8))
            == .welcome(protocolVersion: 2, daemonPID: 4242))
        // A 2.0-style hello encodes as 2.0 did: the new fields are left out, not null.
        #expect(try Self.encode(ClientRequest.hello(protocolVersion: 2, client: "replay")) == #"{"hello":{"client":"replay","protocolVersion":2}}"#)
        let future = try decoder.decode(DaemonEvent.self, from: Data(#"{"error":{"code":"solarFlare","message":"later"}}"#.utf8))
        #expect(future == .error(code: ErrorCode(rawValue: "solarFlare"), message: "later"))
        #expect(!ErrorCode.known.contains(ErrorCode(rawValue: "solarFlare")))
        #expect(try Self.encode(DaemonEvent.error(code: .unsupported, message: "x")) == #"{"error":{"code":"unsupported","message":"x"}}"#)
    }

    /// Optional fields may be left out (or be null); a request carries exactly one key.
    @Test func optionalFieldsMayBeLeftOutAndAMessageHasOneKey() throws {
        let decoder = JSONDecoder()
        #expect(try decoder.decode(ClientRequest.self, from: Data(#"{"stopBroadcast":{"id":null}}"#.utf8)) == .stopBroadcast(id: nil))
        #expect(try decoder.decode(ClientRequest.self, from: Data(#"{"showBroadcastPicker":{"microphone":false}}"#.utf8))
            == .showBroadcastPicker(preferredExtension: nil, microphone: false, scope: nil, setup: nil))
        #expect(try decoder.decode(ClientRequest.self, from: Data(#"{"startRecording":{"options":{"fps":30,"microphone":false,"appAudio":true,"showCursor":true,"video":{"preset":"ultrafast","crf":23}}}}"#.utf8))
            == .startRecording(options: RecordingOptions()))
        #expect(throws: DecodingError.self) {
            try decoder.decode(ClientRequest.self, from: Data(#"{"status":{},"stopRecording":{}}"#.utf8))
        }
        #expect(try decoder.decode(ClientRequest.self, from: Data(#"{"exportRecording":{"id":"rec-1","container":"matroska"}}"#.utf8))
            == .exportRecording(id: "rec-1", container: .matroska))
        // A span (trimmedExport): two optional numbers, left out when absent.
        #expect(try decoder.decode(ClientRequest.self, from: Data(#"{"exportRecording":{"id":"rec-1","from":3,"to":7.5}}"#.utf8))
            == .exportRecording(id: "rec-1", from: 3, to: 7.5))
        #expect(try Self.encode(ClientRequest.exportRecording(id: "rec-1", from: 3)) == #"{"exportRecording":{"from":3,"id":"rec-1"}}"#)
        // A recording of a part of the screen: its area, one key of its own.
        var monitor = RecordingOptions()
        monitor.area = .monitor(name: "DP-1")
        #expect(try decoder.decode(ClientRequest.self, from: Data(#"{"startRecording":{"options":{"fps":30,"microphone":false,"appAudio":true,"showCursor":true,"video":{"preset":"ultrafast","crf":23},"area":{"monitor":{"name":"DP-1"}}}}}"#.utf8))
            == .startRecording(options: monitor))
        #expect(throws: DecodingError.self) {
            try decoder.decode(ClientRequest.self, from: Data(#"{"startBroadcast":{"_0":{"extensionID":"file","setup":{},"microphone":false,"fps":30}}}"#.utf8))
        }
    }

    /// `frameRateMode` came later: one key of its own, absent from older clients (vfr), and
    /// left out of what a vfr request encodes, so older daemons read it as before.
    @Test func theFrameRateModeIsAnOptionalKeyOfItsOwn() throws {
        let base = #"{"fps":30,"microphone":false,"appAudio":true,"showCursor":true,"video":{"preset":"ultrafast","crf":23}"#
        let decoder = JSONDecoder()
        var cfr = RecordingOptions()
        cfr.frameRateMode = .cfr
        #expect(try decoder.decode(RecordingOptions.self, from: Data((base + #","frameRateMode":"cfr"}"#).utf8)) == cfr)
        #expect(try decoder.decode(RecordingOptions.self, from: Data((base + "}").utf8)).frameRateMode == nil)
        #expect(throws: DecodingError.self) {
            try decoder.decode(RecordingOptions.self, from: Data((base + #","frameRateMode":"60p"}"#).utf8))
        }
        let encoded = try JSONEncoder().encode(RecordingOptions())
        #expect(!String(decoding: encoded, as: UTF8.self).contains("frameRateMode"))
        #expect(String(decoding: try JSONEncoder().encode(cfr), as: UTF8.self).contains(#""frameRateMode":"cfr""#))
    }
}

/// `--window` and `--region` as people write them.
@Suite struct CaptureAreaWordsTests {
    @Test func windowIDsAreHexOrDecimal() {
        #expect(CaptureArea.windowID("0x1c00007") == 0x1c0_0007)
        #expect(CaptureArea.windowID("0X1C00007") == 0x1c0_0007)
        #expect(CaptureArea.windowID("29360135") == 29_360_135)
        for bad in ["", "0x", "pick", "-5", "0x1g", "4294967296"] { #expect(CaptureArea.windowID(bad) == nil, "\(bad)") }
    }

    @Test func regionsAreX11Geometry() {
        #expect(CaptureArea.region("800x600+100+50") == .region(x: 100, y: 50, width: 800, height: 600))
        #expect(CaptureArea.region("2X2+0+0") == .region(x: 0, y: 0, width: 2, height: 2))
        for bad in ["800x600", "800x600+100", "800x600-100+50", "800x600+-1+50", "1x600+0+0", "800+600+0+0", "x600+0+0", "800x600+0+0+0"] {
            #expect(CaptureArea.region(bad) == nil, "\(bad)")
        }
    }
}
