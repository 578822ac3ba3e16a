import CXCB
#if canImport(Glibc)
import Glibc
#endif

/// A memfd shared with the X server through MIT-SHM: the server writes the screen's pixels
/// straight into our mapping, with no copy through the socket.
final class SharedImage {
    let width: Int
    let height: Int
    let bytesPerRow: Int
    let pixels: UnsafeMutableRawPointer
    private let size: Int
    private let segment: xcb_shm_seg_t
    private let display: X11Display

    init(display: X11Display, width: Int, height: Int) throws(CaptureError) {
        self.display = display
        self.width = width
        self.height = height
        bytesPerRow = width * 4
        size = bytesPerRow * height
        let fd = CXCB_memfd("openreplaykit-screen")
        guard fd >= 0, ftruncate(fd, off_t(size)) == 0 else {
            if fd >= 0 { close(fd) }
            throw CaptureError(.sharedMemory, "cannot allocate \(size) bytes of shared memory")
        }
        guard let mapping = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapping != MAP_FAILED else {
            close(fd)
            throw CaptureError(.sharedMemory, "cannot map shared memory")
        }
        pixels = mapping
        segment = xcb_generate_id(display.connection)
        // The server takes ownership of the descriptor it is sent; ours closes with the request.
        let cookie = xcb_shm_attach_fd_checked(display.connection, segment, fd, 0)
        if let error = xcb_request_check(display.connection, cookie) {
            free(error)
            munmap(mapping, size)
            throw CaptureError(.sharedMemory, "the X server refused the shared-memory segment")
        }
    }

    deinit {
        xcb_shm_detach(display.connection, segment)
        xcb_flush(display.connection)
        munmap(pixels, size)
    }

    /// Copies the root window's pixels from `x`,`y` on into the mapping; returns false if the
    /// server refused (the screen shrank under us, for instance).
    func grab(root: xcb_window_t, x: Int = 0, y: Int = 0) -> Bool {
        let cookie = xcb_shm_get_image(
            display.connection, root, Int16(x), Int16(y), UInt16(width), UInt16(height), ~0,
            UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), segment, 0)
        guard let reply = xcb_shm_get_image_reply(display.connection, cookie, nil) else { return false }
        free(reply)
        return true
    }
}
