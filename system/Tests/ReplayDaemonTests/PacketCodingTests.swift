import Foundation
import ReplayCaptureModel
import ReplayIPC
import ReplayMedia
import Testing

/// The capture channel's binary form: every message comes back as it went, and bytes that are
/// no message are refused with an error, never a crash (a capture process may be hostile).
@Suite struct PacketCodingTests {
    static let commands: [CaptureCommand] = [
        .start(CaptureStart(
            id: "rec-1", options: RecordingOptions(duration: 2.5, fps: 60, microphone: true, appAudio: false, notify: false,
                                                   audioDevice: "sink.monitor", area: .pickWindow(seconds: 10),
                                                   excludedWindows: [7, UInt32.max]),
            destination: .store, onlyProcess: -4, backend: .portal(restoreToken: "tök€n", dialogTimeout: 120),
            protectedWindows: [0, 1, 0xdead_beef])),
        .start(CaptureStart(id: "", options: RecordingOptions(), destination: .store, onlyProcess: nil,
                            backend: .x11(display: nil), protectedWindows: [])),
        .pause, .resume, .stop, .broadcastLive,
        .end(because: "over its share of the disk"),
        .saveClip(seconds: nil, trigger: .hotkey, id: "clip-2"),
        .saveClip(seconds: 12.25, trigger: .hotkey, id: "clip-3"),
        .protectedWindows([3, 4, 5]),
        .startAppCapture(AppCaptureStart(id: "app", pid: 99, fps: 15, showCursor: false, backend: .x11(display: ":7"),
                                         protectedWindows: [9])),
        .startBroadcastCapture(BroadcastCaptureStart(
            id: "b", options: BroadcastCaptureOptions(fps: 30, showCursor: true, onlyProcess: nil, audio: AudioSource.allCases),
            backend: .x11(display: ":1"), protectedWindows: [])),
        .releaseFrame(slot: 0), .releaseAudio(offset: Int.max),
    ]

    static let reports: [CaptureReport] = [
        .started(RecordingStarted(id: "rec-1", width: 1920, height: 1080, warnings: ["no microphone", ""])),
        .startFailed(code: .captureFailed, message: "cannot open display \":9\"\n"),
        .done,
        .refused(code: .outOfOrder, message: "already"),
        .status(CaptureProcessStatus(phase: .running, progress: RecordingProgress(elapsed: 1.5, frames: 45, dropped: 1, bytes: Int64.max),
                                     clips: ClipStatus(id: "c", buffered: 10, length: 30, bytes: 1 << 40, byteBudget: -1, paused: true,
                                                       width: 2, height: 3, saves: nil),
                                     restoreToken: "t")),
        .status(CaptureProcessStatus(phase: .paused, progress: RecordingProgress(elapsed: -0.0, frames: 0, dropped: 0, bytes: 0),
                                     clips: nil, restoreToken: nil)),
        .entry(RecordingInfo(id: "rec-1", created: 1_795_000_000.123, state: .interrupted, duration: .infinity, frames: 1, dropped: 0,
                             width: 64, height: 48, bytes: 0, error: "SIGSEGV", codec: .hevc)),
        .discard(id: "x"),
        .finished(RecordingSummary(id: "rec-1", duration: 3, frames: 90, dropped: 0, error: nil)),
        .appCaptureStarted(width: 640, height: 480, slots: 3, slotSize: 640 * 480 * 4, restoreToken: nil),
        .frame(slot: 2, bytes: 1024, time: 0.033, width: 64, height: 48),
        .appCaptureEnded(error: nil, captured: 10, dropped: Int.min),
        .broadcastCaptureOpened(width: 1280, height: 720, surfaceSize: 1 << 20, restoreToken: "r"),
        .broadcastSample(Data([0, 1, 2, 255] + Array(repeating: 7, count: 4096))),
        .broadcastSample(Data()),
        .broadcastCaptureEnded(error: "the display went away"),
    ]

    @Test(arguments: commands) func everyCommandComesBackAsItWent(command: CaptureCommand) throws {
        #expect(try PacketCoding.decode(CaptureCommand.self, from: PacketCoding.encode(command)) == command)
    }

    @Test(arguments: reports) func everyReportComesBackAsItWent(report: CaptureReport) throws {
        #expect(try PacketCoding.decode(CaptureReport.self, from: PacketCoding.encode(report)) == report)
    }

    /// Each primitive, through each kind of container, at the edges of its range.
    @Test func primitivesKeepTheirValues() throws {
        struct Every: Codable, Equatable {
            var int8 = Int8.min, int16 = Int16.min, int32 = Int32.min, int64 = Int64.min, int = Int.max
            var uint8 = UInt8.max, uint16 = UInt16.max, uint32 = UInt32.max, uint64 = UInt64.max, uint = UInt.max
            var float = Float.leastNonzeroMagnitude, double = -Double.greatestFiniteMagnitude, infinity = -Double.infinity
            var flag = true, text = "ä\u{0}b", none: String? = nil, some: Int? = 0, nestedNil: [Int?] = [nil, 1, nil]
            var list: [[UInt64]] = [[], [UInt64.max]], map: [String: Bool] = ["a": false, "b": true], single: Int16 = -2
        }
        let decoded = try PacketCoding.decode(Every.self, from: PacketCoding.encode(Every()))
        #expect(decoded == Every())
        #expect(try PacketCoding.decode(Double.self, from: PacketCoding.encode(Double.nan)).isNaN)
        #expect(decoded.uint64 == UInt64.max && decoded.int8 == Int8.min && decoded.none == nil && decoded.some == 0)
    }

    /// What JSON allows a type's own decoder, this allows too: keys read out of order, and a
    /// key that is absent read as nil.
    @Test func aTypeMayReadItsKeysInAnyOrderAndFindOnesAbsent() throws {
        struct Written: Encodable { var a = 1, b = "two" }
        struct Read: Decodable, Equatable {
            var b: String, a: Int, c: Double?, hasC: Bool
            enum Keys: String, CodingKey { case a, b, c }
            init(b: String, a: Int, c: Double?, hasC: Bool) { (self.b, self.a, self.c, self.hasC) = (b, a, c, hasC) }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: Keys.self)
                c = try container.decodeIfPresent(Double.self, forKey: .c)
                b = try container.decode(String.self, forKey: .b)
                a = try container.decode(Int.self, forKey: .a)
                hasC = container.contains(.c)
            }
        }
        #expect(try PacketCoding.decode(Read.self, from: PacketCoding.encode(Written())) == Read(b: "two", a: 1, c: nil, hasC: false))
    }

    @Test func aValueOfTheWrongTypeOrRangeIsAnError() throws {
        #expect(throws: DecodingError.self) { try PacketCoding.decode(UInt8.self, from: PacketCoding.encode(256)) }
        #expect(throws: DecodingError.self) { try PacketCoding.decode(UInt.self, from: PacketCoding.encode(-1)) }
        #expect(throws: DecodingError.self) { try PacketCoding.decode(String.self, from: PacketCoding.encode(1)) }
        #expect(throws: DecodingError.self) { try PacketCoding.decode(CaptureReport.self, from: PacketCoding.encode(CaptureCommand.stop)) }
    }

    /// Every cut of every message, every byte of them changed, and hand-made hostile packets:
    /// each is refused or decodes, and none crashes. The cuts are all refused.
    @Test func bytesThatAreNoMessageAreRefusedNeverACrash() throws {
        var generator = SystemRandomNumberGenerator()
        for message in Self.reports {
            let bytes = try PacketCoding.encode(message)
            for cut in 0..<bytes.count {
                #expect(throws: DecodingError.self) { try PacketCoding.decode(CaptureReport.self, from: Array(bytes[..<cut])) }
            }
            #expect(throws: DecodingError.self) { try PacketCoding.decode(CaptureReport.self, from: bytes + [0]) }
            for index in bytes.indices {
                var changed = bytes
                changed[index] = UInt8.random(in: 0...255, using: &generator)
                _ = try? PacketCoding.decode(CaptureReport.self, from: changed)
            }
        }
        let hostile: [(String, [UInt8])] = [
            ("a list that claims 4 G values", [8, 0xff, 0xff, 0xff, 0xff, 0]),
            ("bytes that claim 2 GB", [7, 0xff, 0xff, 0xff, 0x7f]),
            ("a key longer than the packet", [9, 1, 0, 0, 0, 0xff, 0, 0, 0, 0]),
            ("an unknown tag", [42]),
            ("a string that is not UTF-8", [6, 2, 0, 0, 0, 0xc3, 0x28]),
            ("lists nested 10,000 deep", Array([[UInt8]](repeating: [8, 1, 0, 0, 0], count: 10_000).joined()) + [0]),
            ("nothing", []),
        ]
        for (what, bytes) in hostile {
            #expect(throws: DecodingError.self, "\(what)") { try PacketCoding.decode(CaptureReport.self, from: bytes) }
        }
    }

    /// The channel itself: a packet in this form goes through with its descriptor, and a
    /// packet that is not (what an older JSON peer, or a hostile one, sends) ends the channel.
    @Test func theChannelCarriesThisFormAndEndsAtAnythingElse() throws {
        let (ours, theirs) = try CaptureChannel.pair()
        defer { ours.close(); theirs.close() }
        try theirs.send(CaptureReport.broadcastSample(Data([1, 2, 3])), descriptors: [0])
        let received = try #require(ours.receive(CaptureReport.self))
        #expect(received.0 == .broadcastSample(Data([1, 2, 3])))
        #expect(received.1.count == 1)
        received.1.forEach { close($0) }
        #expect(send(theirs.descriptor, #"{"done":{}}"#, 11, 0) == 11)
        #expect(ours.receive(CaptureReport.self) == nil)
    }
}
