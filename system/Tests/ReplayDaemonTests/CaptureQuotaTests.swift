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

    /// Clip buffers kept on disk reserve their budgets of the store's disk: together at most
    /// half of what is free when each is admitted.
    @Test func spilledClipBudgetsTogetherStayWithinHalfTheFreeDisk() {
        var quota = CaptureQuota(physicalMemory: 16 << 30)
        let free: Int64 = 10 << 30
        #expect(quota.admit("d0", owner: obs, clipBytes: 16 << 20, diskBytes: 3 << 30, freeDisk: free) == nil)
        #expect(quota.diskBytesReserved == 3 << 30)
        let refused = quota.admit("d1", owner: other, clipBytes: 16 << 20, diskBytes: 3 << 30, freeDisk: free)
        #expect(refused?.contains("half of the store's free space") == true, "\(refused ?? "admitted")")
        #expect(quota.admit("d2", owner: other, clipBytes: 16 << 20, diskBytes: 2 << 30, freeDisk: free) == nil)
        quota.release("d0")
        #expect(quota.diskBytesReserved == 2 << 30)
        #expect(quota.admit("d1", owner: other, clipBytes: 16 << 20, diskBytes: 3 << 30, freeDisk: free) == nil)
        // In memory, a buffer asks no disk, however little is free.
        #expect(quota.admit("m0", owner: obs, clipBytes: 1 << 20, freeDisk: 0) == nil)
    }
}
