import ReplayCaptureModel
#if canImport(Glibc)
import Glibc
#endif

/// Which pixels of a screen picture must be painted black, worked out from the window
/// stack: everything an in-app capture may not see, and the visible parts of protected
/// windows. When unsure (a translucent window above a protected one), it blacks out more
/// rather than less. Both lists hold disjoint rectangles in screen coordinates.
struct CaptureMask: Equatable, Sendable {
    /// The only pixels to keep, or nil to keep all but `black`. Never overlaps `black`.
    let keep: [PixelRect]?
    /// The visible parts of protected windows.
    let black: [PixelRect]
    /// The part of the screen a picture shows.
    let screen: PixelRect

    /// A mask given directly; `keep: []` blacks out everything (failing closed).
    init(keep: [PixelRect]?, black: [PixelRect], screen: PixelRect) {
        self.keep = keep
        self.black = black
        self.screen = screen
    }

    /// Paints the stack bottom to top: each window covers what is beneath it, except that
    /// a translucent window does not hide a protected one. A window is protected when its
    /// id or its application window's id is in `protected`.
    init(windows: [StackedWindow], filter: WindowFilter, protected: Set<UInt32>, screen: PixelRect) {
        var keep: [PixelRect] = []
        var black: [PixelRect] = []
        for window in windows {
            let frame = window.frame.intersection(screen)
            if frame.isEmpty { continue }
            let isProtected = protected.contains(window.id) || protected.contains(window.clientWindow)
            if isProtected {
                black = Self.adding(frame, to: black)
            } else if window.isOpaque {
                black = Self.removing(frame, from: black)
            }
            if case .onlyProcess(let pid) = filter {
                if !isProtected && window.ownerPID == pid {
                    keep = Self.adding(frame, to: keep)
                    // Another client's windows inside the app's own are not the app's.
                    keep = window.foreignParts.reduce(keep) { Self.removing($1.intersection(screen), from: $0) }
                } else {
                    keep = Self.removing(frame, from: keep)
                }
            }
        }
        if case .onlyProcess = filter {
            self.keep = black.reduce(keep) { Self.removing($1, from: $0) }
        } else {
            self.keep = nil
        }
        self.black = black
        self.screen = screen
    }

    /// True when the mask leaves every pixel as it is.
    var isEmpty: Bool { keep == nil && black.isEmpty }

    /// Sets every masked pixel of a BGRA picture of `screen` to zero (black, alpha 0;
    /// encoders ignore alpha). One memset per row and span, so even masking a whole
    /// 1920x1080 picture costs about as much as clearing it once.
    func apply(to pixels: UnsafeMutableRawPointer, bytesPerRow: Int) {
        let onPicture = { (rects: [PixelRect]) in
            rects.map { PixelRect(x: $0.x - screen.x, y: $0.y - screen.y, width: $0.width, height: $0.height) }
        }
        if let keep {
            Self.clear(pixels, bytesPerRow: bytesPerRow, width: screen.width, height: screen.height,
                       outside: true, of: onPicture(keep))
        } else if !black.isEmpty {
            Self.clear(pixels, bytesPerRow: bytesPerRow, width: screen.width, height: screen.height,
                       outside: false, of: onPicture(black))
        }
    }

    private static func adding(_ rect: PixelRect, to region: [PixelRect]) -> [PixelRect] {
        removing(rect, from: region) + [rect]
    }

    private static func removing(_ rect: PixelRect, from region: [PixelRect]) -> [PixelRect] {
        region.flatMap { $0.subtracting(rect) }
    }

    /// Zeroes the pixels inside (or, with `outside`, outside) disjoint `rects`. Rows are
    /// handled in bands between rectangle edges, where the spans to clear stay the same.
    private static func clear(_ pixels: UnsafeMutableRawPointer, bytesPerRow: Int, width: Int, height: Int,
                              outside: Bool, of rects: [PixelRect]) {
        let bounds = PixelRect(x: 0, y: 0, width: width, height: height)
        let rects = rects.map { $0.intersection(bounds) }.filter { !$0.isEmpty }
        let edges = Set([0, height] + rects.flatMap { [$0.y, $0.y + $0.height] }).sorted()
        for (top, bottom) in zip(edges, edges.dropFirst()) {
            let covered = rects.filter { $0.y <= top && top < $0.y + $0.height }
                .map { (start: $0.x, end: $0.x + $0.width) }
                .sorted { $0.start < $1.start }
            var spans = covered
            if outside {
                spans = []
                var x = 0
                for span in covered {
                    if span.start > x { spans.append((x, span.start)) }
                    x = max(x, span.end)
                }
                if x < width { spans.append((x, width)) }
            }
            if spans.isEmpty { continue }
            for y in top..<bottom {
                let row = pixels + y * bytesPerRow
                for span in spans { memset(row + span.start * 4, 0, (span.end - span.start) * 4) }
            }
        }
    }
}
