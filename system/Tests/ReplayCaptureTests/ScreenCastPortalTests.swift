@testable import ReplayCapture
import Foundation
import ReplayDBus
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The portal client's Request/Response handling against a scripted bus.
@Suite struct ScreenCastPortalTests {
    /// A bus that answers like xdg-desktop-portal: each request call returns its Request path
    /// and later emits a Response there, as scripted per method.
    final class FakePortal: PortalBus {
        struct Call { let path: String, interface: String, member: String, arguments: [DBusValue] }

        let uniqueName = ":1.42"
        var version: UInt32 = 5
        var cursorModes: UInt32 = 7
        var sourceTypes: UInt32 = 3
        /// Per method: the Response (code, results), or nil to never answer (a dialog nobody answers).
        var responses: [String: (UInt32, [String: DBusValue])?] = [
            "CreateSession": (0, ["session_handle": .string("/org/freedesktop/portal/desktop/session/1_42/s")]),
            "SelectSources": (0, [:]),
            "Start": (0, ["streams": .array(element: "(ua{sv})", [.structure([.uint32(44), .options([
                "size": .structure([.int32(1280), .int32(720)]), "source_type": .uint32(1)])])]),
                          "restore_token": .string("fresh-token")]),
        ]
        /// Answer on a path of the portal's own choosing, as portals before 0.9 did.
        var ownRequestPaths = false
        var hasPortal = true
        private(set) var calls: [Call] = []
        private var subscriptions: [String: Subscription] = [:]
        private var pending: [String: [DBusValue]] = [:]

        final class Subscription: SignalSubscription {
            var queue: [[DBusValue]] = []
            var cancelled = false
            func next(timeout: Double) throws(DBusError) -> [DBusValue]? { queue.isEmpty ? nil : queue.removeFirst() }
            func cancel() { cancelled = true }
        }

        func call(destination: String, path: String, interface: String, member: String,
                  _ arguments: [DBusValue], timeout: Double) throws(DBusError) -> [DBusValue] {
            calls.append(Call(path: path, interface: interface, member: member, arguments: arguments))
            if interface == "org.freedesktop.DBus.Properties" {
                guard hasPortal else {
                    throw DBusError(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "The name is not activatable")
                }
                switch arguments.last?.string {
                case "version": return [.variant(.uint32(version))]
                case "AvailableCursorModes": return [.variant(.uint32(cursorModes))]
                case "AvailableSourceTypes": return [.variant(.uint32(sourceTypes))]
                default: return [.variant(.uint32(1))]
                }
            }
            // A descriptor of our own, which the session closes.
            if member == "OpenPipeWireRemote" { return [.unixFD(open("/dev/null", O_RDONLY | O_CLOEXEC))] }
            guard interface == ScreenCastPortal.interface, let scripted = responses[member] else { return [] }
            let token = arguments.last?.dictionary?["handle_token"]?.string ?? ""
            let requestPath = ownRequestPaths ? "/org/freedesktop/portal/desktop/request/other/\(member)"
                : ScreenCastPortal.requestPath(uniqueName: uniqueName, token: token)
            if let (code, results) = scripted {
                let body: [DBusValue] = [.uint32(code), .options(results)]
                if let subscription = subscriptions[requestPath] { subscription.queue.append(body) } else { pending[requestPath] = body }
            }
            return [.objectPath(requestPath)]
        }

        func subscribe(path: String, interface: String, member: String) throws(DBusError) -> any SignalSubscription {
            let subscription = Subscription()
            if let body = pending.removeValue(forKey: path) { subscription.queue.append(body) }
            subscriptions[path] = subscription
            return subscription
        }

        func options(of member: String) -> [String: DBusValue] {
            calls.last { $0.member == member }?.arguments.last?.dictionary ?? [:]
        }
    }

    /// Mutter sent 88% of a 30 fps scene when asked for exactly 30: twice the cap is asked.
    @Test func theCompositorIsAskedForTwiceTheFrameCap() {
        #expect(PortalScreenCapture.requestedFramerate(cap: 30) == 60)
        #expect(PortalScreenCapture.requestedFramerate(cap: 1) == 2)
    }

    @Test func requestPathsFollowTheSpec() {
        #expect(ScreenCastPortal.requestPath(uniqueName: ":1.42", token: "t1")
                == "/org/freedesktop/portal/desktop/request/1_42/t1")
    }

    @Test func aSessionAsksForOneMonitorWithPersistenceAndTheRestoreToken() throws {
        let bus = FakePortal()
        let session = try ScreenCastPortal(bus: bus).open(ScreenCastRequest(restoreToken: "old-token"))
        #expect(session.streams == [ScreenCastStream(nodeID: 44, width: 1280, height: 720, sourceType: 1)])
        #expect(session.restoreToken == "fresh-token")
        #expect(session.handle == "/org/freedesktop/portal/desktop/session/1_42/s")
        let selection = bus.options(of: "SelectSources")
        #expect(selection["types"] == .uint32(1))
        #expect(selection["persist_mode"] == .uint32(2))
        #expect(selection["restore_token"] == .string("old-token"))
        #expect(selection["cursor_mode"] == .uint32(2))
        #expect(bus.calls.map(\.member).filter { $0 != "Get" } == ["CreateSession", "SelectSources", "Start", "OpenPipeWireRemote"])
        // Every request carried a handle token, subscribed to before the call.
        #expect(["CreateSession", "SelectSources", "Start"].allSatisfy { bus.options(of: $0)["handle_token"]?.string != nil })
    }

    /// A window pick asks the dialog for a window; a portal that offers none (sway's) is refused before any session.
    @Test func aWindowIsAskedForAsAWindowAndAPortalWithoutWindowsSaysSo() throws {
        let bus = FakePortal()
        _ = try ScreenCastPortal(bus: bus).open(ScreenCastRequest(source: .window, restoreToken: "window-token"))
        #expect(bus.options(of: "SelectSources")["types"] == .uint32(2))
        #expect(bus.options(of: "SelectSources")["restore_token"] == .string("window-token"))

        let monitorsOnly = FakePortal()
        monitorsOnly.sourceTypes = 1
        #expect {
            _ = try ScreenCastPortal(bus: monitorsOnly).open(ScreenCastRequest(source: .window))
        } throws: { error in
            (error as? CaptureError)?.message.contains("offers no window to share (source types 1") == true
        }
        #expect(!monitorsOnly.calls.contains { $0.member == "CreateSession" })
    }

    /// A monitor's token restores only a monitor: the two choices are kept apart, and forgotten together.
    @Test func theMonitorsAndTheWindowsChoicesAreKeptApartAndForgottenTogether() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = (monitor: folder.appendingPathComponent("screencast-token"), window: folder.appendingPathComponent("screencast-token-window"))
        let tokens = ScreenCastTokens(monitor: RestoreTokenKeeper(file: files.monitor), window: RestoreTokenKeeper(file: files.window))
        tokens.keeper(for: .monitor).keep("monitor-token")
        tokens.keeper(for: .window).keep("window-token")
        #expect(tokens.monitor.token == "monitor-token" && tokens.window.token == "window-token")
        #expect(RestoreTokenKeeper(file: files.window).token == "window-token", "the window's choice is not kept across a restart")
        tokens.forget()
        #expect(tokens.monitor.token == nil && tokens.window.token == nil)
        #expect(!FileManager.default.fileExists(atPath: files.monitor.path) && !FileManager.default.fileExists(atPath: files.window.path))
    }

    @Test func portalsBeforeVersion4GetNoPersistenceOptions() throws {
        let bus = FakePortal()
        bus.version = 3
        let session = try ScreenCastPortal(bus: bus).open(ScreenCastRequest(restoreToken: "old-token"))
        #expect(bus.options(of: "SelectSources")["persist_mode"] == nil)
        #expect(bus.options(of: "SelectSources")["restore_token"] == nil)
    }

    @Test func aResponseOnThePortalsOwnPathIsStillHeard() throws {
        let bus = FakePortal()
        bus.ownRequestPaths = true
        let session = try ScreenCastPortal(bus: bus).open(ScreenCastRequest())
        #expect(session.streams.first?.nodeID == 44)
    }

    @Test func aDeclinedDialogIsPortalDeniedAndClosesTheSession() {
        let bus = FakePortal()
        bus.responses["Start"] = (1, [:])
        do {
            _ = try ScreenCastPortal(bus: bus).open(ScreenCastRequest())
            Issue.record("no error")
        } catch {
            #expect(error.code == .portalDenied)
        }
        #expect(bus.calls.last?.member == "Close")
        #expect(bus.calls.last?.interface == "org.freedesktop.portal.Session")
    }

    @Test func noResponseTimesOutClosesTheRequestAndSaysADialogMayWait() {
        let bus = FakePortal()
        bus.responses["SelectSources"] = .some(nil)
        do {
            _ = try ScreenCastPortal(bus: bus).open(ScreenCastRequest(responseTimeout: 0.1))
            Issue.record("no error")
        } catch {
            #expect(error.code == .portalTimedOut)
            #expect(error.message.contains("SelectSources") && error.message.contains("dialog"))
        }
        let closes = bus.calls.filter { $0.member == "Close" }.map(\.interface)
        #expect(closes == ["org.freedesktop.portal.Request", "org.freedesktop.portal.Session"])
    }

    @Test func aStartWithoutStreamsIsAClearError() {
        let bus = FakePortal()
        bus.responses["Start"] = (0, [:])
        do {
            _ = try ScreenCastPortal(bus: bus).open(ScreenCastRequest())
            Issue.record("no error")
        } catch {
            #expect(error.code == .portalUnavailable)
            #expect(error.message.contains("without a stream"))
        }
    }

    @Test func noPortalOnTheBusNamesWhatToInstall() {
        let bus = FakePortal()
        bus.hasPortal = false
        do {
            _ = try ScreenCastPortal(bus: bus).open(ScreenCastRequest())
            Issue.record("no error")
        } catch {
            #expect(error.code == .portalUnavailable)
            #expect(error.message.contains("xdg-desktop-portal") && error.message.contains("ServiceUnknown"))
        }
    }

    @Test(arguments: [
        // (available, show cursor, draws metadata) -> mode asked for
        (UInt32(7), true, false, ScreenCastRequest.Cursor.embedded),
        (7, true, true, .metadata),
        (7, false, false, .hidden),
        (5, true, false, .metadata),  // no embedded: metadata (not drawn, but the picture still comes)
        (2, true, true, .embedded),
    ])
    func cursorModeChoice(available: UInt32, show: Bool, draws: Bool, expected: ScreenCastRequest.Cursor) {
        #expect(ScreenCastRequest(showCursor: show, drawsMetadataCursor: draws).cursorMode(available: available) == expected)
    }

    @Test func noUsableCursorModeLeavesItToThePortal() {
        #expect(ScreenCastRequest(showCursor: false).cursorMode(available: 2) == nil)
    }
}

/// Which pixel layouts the PipeWire consumer offers, and which frames it will read.
@Suite struct PipeWireFormatTests {
    @Test func blueFirstLayoutsArePreferredAndEveryOfferedLayoutMapsBack() {
        #expect(PixelLayout.screen == [.bgrx, .bgra, .rgbx, .rgba])
        #expect(PixelLayout.camera.first == .yuy2 && PixelLayout.yuy2.bytesPerPixel == 2)
        for layout in PixelLayout.allCases { #expect(PixelLayout(spaFormat: layout.spaFormat) == layout) }
        #expect(PixelLayout(spaFormat: 0) == nil)
        #expect(PixelLayout.bgrx.isBlueFirst && !PixelLayout.rgba.isBlueFirst)
    }

    @Test func framesTooShortForTheirFormatAreNotRead() {
        let format = StreamFormat(layout: .bgrx, width: 1280, height: 720)
        #expect(format.rowBytes(stride: 5120, size: 5120 * 720) == 5120)
        #expect(format.rowBytes(stride: 0, size: 5120 * 720) == 5120)  // no stride given: packed rows
        #expect(format.rowBytes(stride: 5376, size: 5376 * 719 + 5120) == 5376)  // padded rows, short last one
        #expect(format.rowBytes(stride: 5120, size: 5120 * 719) == nil)  // a row missing
        #expect(format.rowBytes(stride: 4000, size: 4000 * 720) == nil)  // rows narrower than the picture
        #expect(format.rowBytes(stride: -5120, size: 5120 * 720) == nil)  // bottom-up layouts are not read
    }

    @Test func aCamerasYUY2FrameHasTwoBytesAPixel() {
        let format = StreamFormat(layout: .yuy2, width: 640, height: 480)
        #expect(format.rowBytes(stride: 0, size: 1280 * 480) == 1280)
        #expect(format.rowBytes(stride: 1280, size: 1280 * 479) == nil)
    }
}
