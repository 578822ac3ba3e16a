import ReplayCaptureModel
@testable import ReplayDaemon
import Testing

/// Connection caps: the person's allowance lies outside the apps' total.
@Suite struct ConnectionLimitsTests {
    @Test func thePersonGetsInWhenAppsHoldEveryPlace() {
        let limits = ConnectionLimits(caps: .init(perUser: 3, person: 2, total: 4))
        #expect(limits.admit(uid: 1, isPerson: false) == nil)
        #expect(limits.admit(uid: 1, isPerson: false) == nil)
        #expect(limits.admit(uid: 1, isPerson: false) == nil)
        #expect(limits.admit(uid: 1, isPerson: false)?.contains("user 1 already has 3") == true)
        #expect(limits.admit(uid: 2, isPerson: false) == nil)
        #expect(limits.admit(uid: 3, isPerson: false)?.contains("at most 4 app connections") == true)
        #expect(limits.admit(uid: 1000, isPerson: true) == nil)
        #expect(limits.admit(uid: 1000, isPerson: true) == nil)
        #expect(limits.admit(uid: 1000, isPerson: true)?.contains("person's own replay tools") == true)
        limits.release(uid: 2, isPerson: false)
        #expect(limits.admit(uid: 3, isPerson: false) == nil)
    }

    /// The apps' total and the pages' share both fit the open-file limit, beside the person's
    /// allowance and the reserve: together they never take the descriptors the others need.
    @Test func theAppsTotalAndThePagesShareFitTheOpenFileLimit() {
        let at1024 = ConnectionLimits.Caps.standard.fitting(descriptors: 1024)
        #expect(at1024.pages == 128)
        #expect(at1024.total == 1024 - 64 - 128 - ConnectionLimits.Caps.reserved)
        #expect(at1024.total + at1024.person + at1024.pages + ConnectionLimits.Caps.reserved <= 1024)
        let large = ConnectionLimits.Caps.standard.fitting(descriptors: 1 << 20)
        #expect(large.total == 2048 && large.pages == 128)
        let small = ConnectionLimits.Caps.standard.fitting(descriptors: 100)
        #expect(small.total == 16 && small.pages == 12)
    }
}
