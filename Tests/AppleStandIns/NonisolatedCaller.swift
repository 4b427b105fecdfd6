// A push delegate calling the presenters from a nonisolated context, as the Cuti-E SDK's README does.
final class Handler {
    nonisolated func open(_ id: String) { CutiE().showInbox(conversationId: id) }
    func consent() async { CutiE().requestAnalyticsConsent { granted in print(granted) } ; CutiE().showFeedback { id in print(id) } }
}
