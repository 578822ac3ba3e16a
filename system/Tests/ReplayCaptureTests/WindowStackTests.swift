import CXCB
#if canImport(Glibc)
import Glibc
#endif
@testable import ReplayCapture
import ReplaySystem
import Testing

/// Against a real Xvfb: the X server itself must name this test process as the owner of a
/// window the test creates.
@Suite struct WindowStackTests {
    /// An Xvfb of our own on a display it picks (-displayfd); `stop()` it in a defer.
    final class Xvfb {
        let server: ChildProcess
        let display: String

        init() throws {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw CaptureError(.noDisplay, "pipe failed") }
            defer { close(ends[0]) }
            do {
                server = try ChildProcess(path: "/usr/bin/Xvfb", arguments: [
                    "-displayfd", "1", "-nolisten", "tcp", "-noreset", "-screen", "0", "640x480x24",
                ], environment: [:], stdout: .descriptor(ends[1]))
            } catch {
                close(ends[1])
                throw error
            }
            close(ends[1])
            var line = ""
            var pollfd = Glibc.pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
            var byte: UInt8 = 0
            while poll(&pollfd, 1, 10_000) > 0, read(ends[0], &byte, 1) == 1, byte != UInt8(ascii: "\n") {
                line.append(Character(UnicodeScalar(byte)))
            }
            guard Int(line) != nil else {
                server.terminate()
                throw CaptureError(.noDisplay, "Xvfb did not start")
            }
            display = ":\(line)"
        }

        func stop() { server.terminate() }
    }

    /// Another connection, as an application (or a window manager) would have; `close()` it
    /// in a defer (its windows go with it).
    final class Client {
        let connection: OpaquePointer

        init(_ display: String) throws {
            connection = try #require(xcb_connect(display, nil))
            #expect(xcb_connection_has_error(connection) == 0)
        }

        func close() { xcb_disconnect(connection) }

        func createWindow(in parent: UInt32, x: Int16, y: Int16, width: UInt16, height: UInt16, border: UInt16 = 0,
                          inputOnly: Bool = false) -> UInt32 {
            let window = xcb_generate_id(connection)
            let windowClass = inputOnly ? XCB_WINDOW_CLASS_INPUT_ONLY : XCB_WINDOW_CLASS_INPUT_OUTPUT
            xcb_create_window(connection, inputOnly ? 0 : UInt8(XCB_COPY_FROM_PARENT), window, parent, x, y, width, height,
                              border, UInt16(windowClass.rawValue), xcb_visualid_t(XCB_COPY_FROM_PARENT), 0, nil)
            return window
        }

        /// A round trip: every request sent before has been handled once its reply is here.
        func sync() {
            free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), nil))
        }
    }

    @Test func aWindowCreatedByThisProcessIsReportedWithThisProcesssPidAndFrame() throws {
        let xvfb = try Xvfb()
        defer { xvfb.stop() }
        let display = try X11Display(name: xvfb.display)
        let stack = try WindowStack(display: display)
        let app = try Client(xvfb.display)
        defer { app.close() }
        let window = app.createWindow(in: display.root, x: 10, y: 20, width: 100, height: 50, border: 2)
        let child = app.createWindow(in: window, x: 5, y: 5, width: 10, height: 10)
        let hidden = app.createWindow(in: display.root, x: 0, y: 0, width: 100, height: 100)
        xcb_map_window(app.connection, child)
        xcb_map_window(app.connection, window)
        app.sync()

        #expect(stack.windows() == [
            StackedWindow(id: window, frame: PixelRect(x: 10, y: 20, width: 104, height: 54), ownerPID: getpid()),
        ])
        #expect(stack.ownerPID(of: window) == getpid())
        #expect(stack.ownerPID(of: child) == getpid())
        #expect(stack.ownerPID(of: hidden) == getpid())
        // XRes gives the server's own pid for the server's windows; they belong to no app.
        #expect(stack.ownerPID(of: display.root) == nil)
        #expect(stack.ownerPID(of: window + 1000) == nil)
    }

    @Test func aWindowFramedByAWindowManagerIsTheApplicationWindowInside() throws {
        let xvfb = try Xvfb()
        defer { xvfb.stop() }
        let display = try X11Display(name: xvfb.display)
        let stack = try WindowStack(display: display)
        let app = try Client(xvfb.display), manager = try Client(xvfb.display)
        defer {
            app.close()
            manager.close()
        }

        let window = app.createWindow(in: display.root, x: 0, y: 0, width: 100, height: 50)
        app.sync()
        // What a reparenting window manager does: a frame with a title bar of its own around the window.
        let frame = manager.createWindow(in: display.root, x: 50, y: 60, width: 120, height: 80, border: 1)
        let titleBar = manager.createWindow(in: frame, x: 0, y: 0, width: 120, height: 20)
        let inputOnly = manager.createWindow(in: display.root, x: 0, y: 0, width: 640, height: 480, inputOnly: true)
        xcb_reparent_window(manager.connection, window, frame, 4, 20)
        let name = "WM_STATE"
        let atom = try #require(xcb_intern_atom_reply(
            manager.connection, xcb_intern_atom(manager.connection, 0, UInt16(name.utf8.count), name), nil))
        defer { free(atom) }
        let normalState: [UInt32] = [1, 0]
        xcb_change_property(manager.connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window,
                            atom.pointee.atom, atom.pointee.atom, 32, 2, normalState)
        for mapped in [titleBar, window, frame, inputOnly] { xcb_map_window(manager.connection, mapped) }
        manager.sync()

        #expect(stack.windows() == [
            StackedWindow(id: frame, clientWindow: window, frame: PixelRect(x: 50, y: 60, width: 122, height: 82),
                          ownerPID: getpid()),
        ])
    }
}
