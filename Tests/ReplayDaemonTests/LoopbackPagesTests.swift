import ReplayIPC
import Testing
@testable import ReplayDaemon

@Suite struct LoopbackPagesTests {
    @Test func anAppsExecutableCannotInjectMarkupIntoTheConsentPage() {
        let prompt = ConsentPrompt(
            requestID: "consent-1", executable: "/tmp/<script>alert(1)</script>\"evil", pid: 1, uid: 2,
            screen: true, appAudio: false, microphone: true, pageURL: nil)
        let page = PageTemplates.consent(prompt, token: "t")
        #expect(!page.contains("<script>"))
        #expect(page.contains("&lt;script&gt;"))
        #expect(page.contains("the screen and the microphone"))
    }

    @Test func byteRangesAreParsedAndClampedToTheFile() {
        #expect(LoopbackPages.byteRange("bytes=0-99", size: 1000) == 0...99)
        #expect(LoopbackPages.byteRange("bytes=900-", size: 1000) == 900...999)
        #expect(LoopbackPages.byteRange("bytes=900-5000", size: 1000) == 900...999)
        #expect(LoopbackPages.byteRange("bytes=1000-", size: 1000) == nil)
        #expect(LoopbackPages.byteRange("bytes=5-1", size: 1000) == nil)
        #expect(LoopbackPages.byteRange("bytes=0-1,5-6", size: 1000) == nil)
        #expect(LoopbackPages.byteRange("lines=0-1", size: 1000) == nil)
    }
}
