@testable import ReplayDaemon
import Testing

/// A capture process's session ends once both its channel has closed and it has been reaped,
/// in either order, not while held, and once.
@Suite struct CaptureProcessEndTests {
    @Test func itEndsOnceBothHaveHappenedInEitherOrder() {
        var channelFirst = CaptureProcessEnd()
        #expect(channelFirst.note(channelClosed: true) == nil)
        #expect(channelFirst.note(exitStatus: 0) == 0)
        #expect(channelFirst.isOver)

        var exitFirst = CaptureProcessEnd()
        #expect(exitFirst.note(exitStatus: 139) == nil)
        #expect(!exitFirst.isOver)
        #expect(exitFirst.note(channelClosed: true) == 139)
    }

    @Test func aHeldEndComesWhenReleasedAndOnlyOnce() {
        var end = CaptureProcessEnd(held: true)
        #expect(end.note(channelClosed: true) == nil)
        #expect(end.note(exitStatus: 1) == nil)
        #expect(!end.isOver)
        end.held = false
        #expect(end.note() == 1)
        #expect(end.note() == nil)
        #expect(end.note(channelClosed: true, exitStatus: 2) == nil)
        #expect(end.exitStatus == 1)
    }
}
