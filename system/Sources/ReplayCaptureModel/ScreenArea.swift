import ReplayMedia

/// What part of the screen a capture takes.
public enum ScreenArea: Sendable, Equatable {
    /// All of it; the pictures follow the screen's size.
    case screen
    /// One monitor by its RandR name.
    case monitor(String)
    /// One window, followed as it moves and resizes.
    case window(UInt32)
    /// The window the person clicks next, within `timeout` seconds.
    case pickWindow(timeout: Double)
    /// A fixed rectangle of the screen.
    case region(PixelRect)
}

/// The sizes of an area capture, worked out once it starts: the pictures keep the size the
/// area had then (what a movie needs), and what is grabbed later is fitted into it.
package struct AreaFraming {
    /// The size of every picture delivered: the area's first size, rounded down to even.
    package let pictureSize: (width: Int, height: Int)

    package init(first rect: PixelRect) {
        pictureSize = evenSize(width: rect.width, height: rect.height)
    }

    /// What to grab of `rect` (where the area is now): its part on the screen, nil when
    /// nothing of it is, or it is too small to make a picture.
    package static func grabbed(_ rect: PixelRect, screen: PixelRect) -> PixelRect? {
        let visible = rect.intersection(screen)
        return visible.width >= 2 && visible.height >= 2 ? visible : nil
    }

    /// Whether a grab of `rect` fills a picture as it is, or must be fitted into it (scaled
    /// with its shape kept, bars around it).
    package func needsFitting(_ rect: PixelRect) -> Bool {
        evenSize(width: rect.width, height: rect.height) != pictureSize
    }

    /// Checks that a region lies on the screen and can make a picture.
    package static func validate(region: PixelRect, screen: PixelRect) throws(CaptureError) {
        guard region.width >= 2, region.height >= 2, region.x >= 0, region.y >= 0,
              region.x + region.width <= screen.width, region.y + region.height <= screen.height else {
            throw CaptureError(.areaUnavailable, "the region \(region.width)x\(region.height)+\(region.x)+\(region.y) "
                + "does not lie on the \(screen.width)x\(screen.height) screen")
        }
    }
}
