import CXCB
#if canImport(Glibc)
import Glibc
#endif

/// Draws the pointer into captured BGRA pixels: X does not include it in the screen image.
/// The cursor's picture comes from XFIXES and is cached until its serial changes.
final class CursorOverlay {
    private let display: X11Display
    private var serial: UInt32 = 0
    private var picture: [UInt32] = []
    private var pictureWidth = 0, pictureHeight = 0, hotX = 0, hotY = 0
    /// Where the cursor was last drawn, to notice movement on an otherwise still screen.
    private(set) var position: (x: Int, y: Int) = (-1, -1)

    init(display: X11Display) { self.display = display }

    /// The pointer's position now, one round trip.
    func pointerPosition() -> (x: Int, y: Int)? {
        guard let reply = xcb_query_pointer_reply(display.connection, xcb_query_pointer(display.connection, display.root), nil)
        else { return nil }
        defer { free(reply) }
        return (Int(reply.pointee.root_x), Int(reply.pointee.root_y))
    }

    /// Composites the current cursor over `pixels` (premultiplied ARGB over BGRA), a picture
    /// of the screen from `origin` on.
    func draw(into pixels: UnsafeMutableRawPointer, width: Int, height: Int, bytesPerRow: Int, origin: (x: Int, y: Int) = (0, 0)) {
        guard let reply = xcb_xfixes_get_cursor_image_reply(
            display.connection, xcb_xfixes_get_cursor_image(display.connection), nil) else { return }
        defer { free(reply) }
        let image = reply.pointee
        position = (Int(image.x), Int(image.y))
        if image.cursor_serial != serial || picture.isEmpty {
            serial = image.cursor_serial
            pictureWidth = Int(image.width)
            pictureHeight = Int(image.height)
            hotX = Int(image.xhot)
            hotY = Int(image.yhot)
            let count = pictureWidth * pictureHeight
            let source = xcb_xfixes_get_cursor_image_cursor_image(reply)!  // never nil: the pixels follow the reply
            picture = Array(UnsafeBufferPointer(start: source, count: count))
        }
        let left = position.x - hotX - origin.x, top = position.y - hotY - origin.y
        for row in stride(from: max(0, -top), to: pictureHeight, by: 1) {
            let y = top + row
            if y >= height { break }
            let line = (pixels + y * bytesPerRow).assumingMemoryBound(to: UInt32.self)
            for column in stride(from: max(0, -left), to: pictureWidth, by: 1) {
                let x = left + column
                if x >= width { break }
                let source = picture[row * pictureWidth + column]
                let alpha = source >> 24
                if alpha == 0 { continue }
                if alpha == 255 {
                    line[x] = source
                    continue
                }
                let destination = line[x]
                let inverse = 255 - alpha
                var result: UInt32 = 0xff00_0000
                for shift: UInt32 in [0, 8, 16] {
                    let s = (source >> shift) & 0xff
                    let d = (destination >> shift) & 0xff
                    result |= min(255, s + (d * inverse + 127) / 255) << shift
                }
                line[x] = result
            }
        }
    }
}
