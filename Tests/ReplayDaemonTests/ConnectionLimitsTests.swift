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

    @Test func theAppsTotalFitsTheOpenFileLimit() {
        #expect(ConnectionLimits.Caps.standard.fitting(descriptors: 1024).total == 1024 - 64 - ConnectionLimits.Caps.reserved)
        #expect(ConnectionLimits.Caps.standard.fitting(descriptors: 1 << 20).total == 2048)
        #expect(ConnectionLimits.Caps.standard.fitting(descriptors: 100).total == 16)
    }
}
