import ReplayCaptureModel
@testable import ReplayDaemon
import Testing

@Suite struct CaptureQuotaTests {
    let obs = CaptureQuota.Owner.app(uid: 1000, executable: "/usr/bin/obs")
    let other = CaptureQuota.Owner.app(uid: 1001, executable: "/usr/bin/obs")

    @Test func anAppHoldsFourAndAnotherIsCountedApart() {
        var quota = CaptureQuota(physicalMemory: 16 << 30)
        for index in 0..<CaptureQuota.perApp { #expect(quota.admit("a\(index)", owner: obs) == nil) }
        #expect(quota.admit("a4", owner: obs)?.contains("already runs 4 captures") == true)
        // The same program as another user is another app.
        #expect(quota.admit("b0", owner: other) == nil)
        quota.release("a0")
        #expect(quota.admit("a4", owner: obs) == nil)
    }

    @Test func allAppsTogetherHoldSixteenAndThePersonHasPlacesOfItsOwn() {
        var quota = CaptureQuota(physicalMemory: 16 << 30)
        for app in 0..<CaptureQuota.appsInAll {
            #expect(quota.admit("app\(app)", owner: .app(uid: 1000, executable: "/tmp/copy\(app)")) == nil)
        }
        #expect(quota.admit("more", owner: .app(uid: 1000, executable: "/tmp/another"))?.contains("in all") == true)
        for index in 0..<CaptureQuota.personInAll { #expect(quota.admit("p\(index)", owner: .person) == nil) }
        #expect(quota.admit("p-more", owner: .person) != nil)
    }

    @Test func clipBudgetsTogetherStayWithinAQuarterOfMemory() {
        var quota = CaptureQuota(physicalMemory: 16 << 30)
        #expect(quota.clipBytesInAll == 4 << 30)
        #expect(quota.admit("c0", owner: obs, clipBytes: 3 << 30) == nil)
        #expect(quota.admit("c1", owner: other, clipBytes: 2 << 30)?.contains("a quarter of this machine's memory") == true)
        // A refusal takes no place.
        #expect(quota.admit("c2", owner: other, clipBytes: 1 << 30) == nil)
        quota.release("c0")
        #expect(quota.admit("c1", owner: other, clipBytes: 2 << 30) == nil)
    }
}
