import CXCB
public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An example app's one window, drawn with plain XCB: a coloured note with a line of text on
/// a white band (Secret Notes shows its secret there, or a cover over it).
public final class NoteWindow {
    public let id: UInt32
    private let connection: OpaquePointer
    private let gc: xcb_gcontext_t
    private let font: xcb_font_t
    private let width: Int
    private let height: Int
    private let colour: UInt32

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Opens `$DISPLAY` and maps a window at `x`,`y` in colour `colour` (0xRRGGBB).
    public init(x: Int, y: Int, width: Int, height: Int, colour: UInt32, title: String) throws {
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(nil, &screenNumber), xcb_connection_has_error(connection) == 0 else {
            throw Failure(description: "cannot connect to the X display in $DISPLAY")
        }
        self.connection = connection
        self.width = width
        self.height = height
        self.colour = colour
        var roots = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<screenNumber { xcb_screen_next(&roots) }
        let screen = roots.data.pointee
        id = xcb_generate_id(connection)
        var values: [UInt32] = [colour, UInt32(XCB_EVENT_MASK_EXPOSURE.rawValue)]
        xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), id, screen.root, Int16(x), Int16(y),
                          UInt16(width), UInt16(height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue),
                          screen.root_visual, UInt32(XCB_CW_BACK_PIXEL.rawValue | XCB_CW_EVENT_MASK.rawValue), &values)
        xcb_change_property(connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), id, xcb_atom_t(XCB_ATOM_WM_NAME.rawValue),
                            xcb_atom_t(XCB_ATOM_STRING.rawValue), 8, UInt32(title.utf8.count), title)
        font = xcb_generate_id(connection)
        xcb_open_font(connection, font, 5, "fixed")
        gc = xcb_generate_id(connection)
        var gcValues: [UInt32] = [0x000000, colour, font]
        xcb_create_gc(connection, gc, id, UInt32(XCB_GC_FOREGROUND.rawValue | XCB_GC_BACKGROUND.rawValue | XCB_GC_FONT.rawValue),
                      &gcValues)
        xcb_map_window(connection, id)
        xcb_flush(connection)
    }

    deinit { xcb_disconnect(connection) }

    /// Paints the note with `line` on its band, and waits until the X server has drawn it, so
    /// a capture right after sees this picture.
    public func show(_ line: String) {
        xcb_clear_area(connection, 0, id, 0, 0, 0, 0)
        fill(0xffffff, x: 20, y: 40, width: width - 40, height: 40)
        text(line, x: 30, y: 65)
        xcb_flush(connection)
        free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), nil))
    }

    /// `X,Y,WIDTH,HEIGHT` with positive sizes, as the examples' `--geometry` takes it.
    public static func geometry(_ text: String) -> (x: Int, y: Int, width: Int, height: Int)? {
        let parts = text.split(separator: ",").compactMap { Int($0) }
        guard parts.count == 4, parts[2] > 0, parts[3] > 0 else { return nil }
        return (parts[0], parts[1], parts[2], parts[3])
    }

    /// red, green, blue or six hex digits, as the examples' `--colour` takes it.
    public static func colour(_ text: String) -> UInt32? {
        switch text {
        case "red": 0xff0000
        case "green": 0x00ff00
        case "blue": 0x0000ff
        default: text.count == 6 ? UInt32(text, radix: 16) : nil
        }
    }

    /// One JSON line on standard output, written at once (tests read it while the app runs).
    public static func report(_ fields: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    private func fill(_ colour: UInt32, x: Int, y: Int, width: Int, height: Int) {
        var value = colour
        xcb_change_gc(connection, gc, UInt32(XCB_GC_FOREGROUND.rawValue), &value)
        var rectangle = xcb_rectangle_t(x: Int16(x), y: Int16(y), width: UInt16(width), height: UInt16(height))
        xcb_poly_fill_rectangle(connection, id, gc, 1, &rectangle)
        value = 0x000000
        xcb_change_gc(connection, gc, UInt32(XCB_GC_FOREGROUND.rawValue), &value)
    }

    private func text(_ string: String, x: Int, y: Int) {
        let bytes = Array(string.utf8.prefix(255))
        var background = UInt32(0xffffff)
        xcb_change_gc(connection, gc, UInt32(XCB_GC_BACKGROUND.rawValue), &background)
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                _ = xcb_image_text_8(connection, UInt8(bytes.count), id, gc, Int16(x), Int16(y), $0.baseAddress)
            }
        }
    }
}
