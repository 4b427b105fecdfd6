import PurseFormats
import Testing

@Suite("URIComponent")
struct URIComponentTests {
    /// What `encodeURIComponent` gives in a browser for the same text.
    @Test func encodesAsJavaScriptDoes() {
        #expect(URIComponent.encode("a b&c=d/é~*'()!") == "a%20b%26c%3Dd%2F%C3%A9~*'()!")
        #expect(URIComponent.encode(#"{"cuid":"alice","port":1234}"#) == "%7B%22cuid%22%3A%22alice%22%2C%22port%22%3A1234%7D")
        #expect(URIComponent.encode("2026-11-25T18:00:00.000Z") == "2026-11-25T18%3A00%3A00.000Z")
        #expect(URIComponent.encode("₦🪙+?#") == "%E2%82%A6%F0%9F%AA%99%2B%3F%23")
        #expect(URIComponent.encode("") == "")
    }
}
